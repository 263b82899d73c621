// PlannerService: the gRPC adapter of rein.v1.Planner over a PlannerBackend.
#ifndef REIN_PLANNER_SERVICE_PLANNER_SERVICE_H_
#define REIN_PLANNER_SERVICE_PLANNER_SERVICE_H_

#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"
#include "planner_service/planner_backend.h"
#include "rein/v1/planner.grpc.pb.h"

namespace rein {

// Validates each request, hands it with the call's deadline to the backend, converts the
// status, logs one JSON line per call (run_id, stage, code, duration) and counts calls and
// tokens. Thread-safe when the backend is.
class PlannerService final : public rein::v1::Planner::Service {
 public:
  // `backend` is not owned and must outlive the service.
  explicit PlannerService(PlannerBackend* backend) : backend_(backend) {}

  grpc::Status Plan(grpc::ServerContext* context, const rein::v1::PlanRequest* request,
                    rein::v1::PlanResponse* response) override;
  grpc::Status Decide(grpc::ServerContext* context, const rein::v1::DecideRequest* request,
                      rein::v1::DecideResponse* response) override;
  grpc::Status Evaluate(grpc::ServerContext* context, const rein::v1::EvaluateRequest* request,
                        rein::v1::EvaluateResponse* response) override;

 private:
  PlannerBackend* const backend_;
};

}  // namespace rein

#endif  // REIN_PLANNER_SERVICE_PLANNER_SERVICE_H_
