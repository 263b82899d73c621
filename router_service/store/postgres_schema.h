// The PostgreSQL store's layout and the SQL fragments its two files share (postgres_run_store.cc,
// postgres_fleet.cc). Private to the postgres_run_store library.
#ifndef REIN_ROUTER_SERVICE_STORE_POSTGRES_SCHEMA_H_
#define REIN_ROUTER_SERVICE_STORE_POSTGRES_SCHEMA_H_

#include <cstdint>
#include <initializer_list>

#include "router_service/store/pg_session.h"

namespace rein::postgres_schema {

// pg_advisory_xact_lock key that serializes schema creation between routers ("rein").
inline constexpr int64_t kSchemaLockKey = 0x7265696e;

// run_id is compared byte by byte ("C"), as in SQLite, so page order and cursors never depend
// on the database's locale.
inline constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT COLLATE "C" PRIMARY KEY,
  request_id TEXT COLLATE "C" UNIQUE,
  stage BIGINT NOT NULL,
  reason BIGINT NOT NULL,
  version BIGINT NOT NULL,
  last_seq BIGINT NOT NULL,
  created_us BIGINT NOT NULL,
  updated_us BIGINT NOT NULL,
  run BYTEA NOT NULL,
  state BYTEA NOT NULL,
  owner TEXT COLLATE "C",
  lease_epoch BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_by_created ON runs (created_us DESC, run_id DESC);
CREATE INDEX IF NOT EXISTS runs_by_stage ON runs (stage, created_us DESC, run_id DESC);
CREATE INDEX IF NOT EXISTS runs_by_reason ON runs (reason, created_us DESC, run_id DESC);
CREATE INDEX IF NOT EXISTS runs_unfinished ON runs (created_us, run_id)
  WHERE stage NOT IN (7, 8, 9);
CREATE TABLE IF NOT EXISTS events (
  run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  seq BIGINT NOT NULL,
  body BYTEA NOT NULL,
  PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS snapshots (
  run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  version BIGINT NOT NULL,
  iteration BIGINT NOT NULL,
  state BYTEA NOT NULL,
  PRIMARY KEY (run_id, version)
);
ALTER TABLE runs ADD COLUMN IF NOT EXISTS owner TEXT COLLATE "C";
ALTER TABLE runs ADD COLUMN IF NOT EXISTS lease_epoch BIGINT NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS runs_unfinished_by_owner ON runs (owner, created_us, run_id)
  WHERE stage NOT IN (7, 8, 9);
CREATE TABLE IF NOT EXISTS routers (
  router_id TEXT COLLATE "C" PRIMARY KEY,
  incarnation TEXT NOT NULL,
  heartbeat TIMESTAMPTZ NOT NULL,
  ttl_us BIGINT NOT NULL
);
)sql";

// Step 4, namespaces (docs/NAMESPACES.md): every run belongs to one, existing runs to
// `default`; request_id is unique per namespace instead of globally. Idempotent.
inline constexpr char kStep4[] = R"sql(
ALTER TABLE runs ADD COLUMN IF NOT EXISTS namespace TEXT COLLATE "C" NOT NULL DEFAULT 'default';
ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_request_id_key;
CREATE UNIQUE INDEX IF NOT EXISTS runs_by_request ON runs (namespace, request_id);
CREATE INDEX IF NOT EXISTS runs_by_namespace ON runs (namespace, created_us DESC, run_id DESC);
)sql";

// Step 5: the webhook outbox (notification_outbox.h), one row per notice. `status` is
// NotificationStatus; `delivered_to` the endpoints that took it, one per line; owner and
// lease_epoch fence its delivery as runs.owner and runs.lease_epoch fence a run's commits.
inline constexpr char kStep5Outbox[] = R"sql(
CREATE TABLE IF NOT EXISTS notifications (
  notice_id TEXT COLLATE "C" PRIMARY KEY,
  run_id TEXT COLLATE "C" NOT NULL,
  seq BIGINT NOT NULL,
  event BYTEA NOT NULL,
  state BYTEA NOT NULL,
  committed_us BIGINT NOT NULL,
  status BIGINT NOT NULL DEFAULT 0,
  attempts BIGINT NOT NULL DEFAULT 0,
  next_attempt_us BIGINT NOT NULL,
  last_error TEXT NOT NULL DEFAULT '',
  delivered_to TEXT NOT NULL DEFAULT '',
  owner TEXT COLLATE "C",
  lease_epoch BIGINT NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS notifications_due ON notifications (next_attempt_us, notice_id)
  WHERE status = 0;
CREATE INDEX IF NOT EXISTS notifications_by_commit ON notifications (committed_us DESC);
)sql";

// A router's lease is valid while this holds (the server's clock, never a router's).
inline constexpr char kLive[] =
    "(heartbeat + ttl_us * interval '1 microsecond' > clock_timestamp())";
// The NOTIFY channel of commits.
inline constexpr char kChannel[] = "rein_runs";
// The columns ParseRunRows reads, in its order.
inline constexpr char kRunColumns[] = "run_id, run, state, COALESCE(owner, ''), lease_epoch";
#define REIN_RUN_COLUMN_TYPES kTextOid, kByteaOid, kByteaOid, kTextOid, kInt8Oid
inline constexpr std::initializer_list<Oid> kRunColumnTypes = {REIN_RUN_COLUMN_TYPES};

}  // namespace rein::postgres_schema

#endif  // REIN_ROUTER_SERVICE_STORE_POSTGRES_SCHEMA_H_
