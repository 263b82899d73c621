// The console: sign-in, the inbox of paused runs, the runs list, and a run's page.
import { render } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import {
  errorText,
  makeClient,
  probeRoles,
  ReinClient,
  saveToken,
  savedToken,
  Stage,
  type Roles,
  type Run,
} from "./api";
import { age, millis, pauseLabel, stageName } from "./format";
import { ComparePage } from "./compare_page";
import { RunPage } from "./run_page";

// All paused runs of the fleet, oldest first (any router answers for every run).
export async function pausedRuns(client: ReinClient): Promise<Run[]> {
  const runs: Run[] = [];
  let pageToken = "";
  for (let page = 0; page < 20; page++) {
    const reply = await client.list({ stage: Stage.PAUSED, pageSize: 1000, pageToken });
    runs.push(...reply.runs);
    pageToken = reply.nextPageToken;
    if (!pageToken) break;
  }
  return runs.sort((a, b) => millis(a.updatedAt) - millis(b.updatedAt));
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return hash;
}

function SignIn({ onToken, error }: { onToken: (t: string) => void; error: string }) {
  const [token, setToken] = useState("");
  return (
    <main>
      <h2>Sign in</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          onToken(token.trim());
        }}
      >
        <label>
          Bearer token (empty when the router has no token file)
          <input type="password" autoComplete="off" value={token} onInput={(e) => setToken(e.currentTarget.value)} />
        </label>
        <button type="submit">Sign in</button>
      </form>
      {error && <p class="error" role="alert">{error}</p>}
      <p class="muted">The token is kept for this browser tab's session only.</p>
    </main>
  );
}

function Inbox({ client }: { client: ReinClient }) {
  const [runs, setRuns] = useState<Run[] | null>(null);
  const [error, setError] = useState("");
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    let stopped = false;
    const load = async () => {
      try {
        const all = await pausedRuns(client);
        if (!stopped) {
          setRuns(all);
          setError("");
          setNow(Date.now());
        }
      } catch (e) {
        if (!stopped) setError(errorText(e));
      }
    };
    load();
    const timer = setInterval(load, 2000);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [client]);
  const groups = useMemo(() => {
    const by = new Map<string, Run[]>();
    for (const run of runs ?? []) {
      const label = pauseLabel(run.state?.pause);
      by.set(label, [...(by.get(label) ?? []), run]);
    }
    return [...by.entries()];
  }, [runs]);
  return (
    <main>
      <h2>
        Inbox <span class="muted" id="inbox-count">({runs?.length ?? "…"} paused)</span>
      </h2>
      {error && <p class="error" role="alert">{error}</p>}
      {runs && runs.length === 0 && <p>No run waits for a person.</p>}
      {groups.map(([label, list]) => (
        <section key={label} aria-label={label}>
          <h3>
            {label} ({list.length})
          </h3>
          <table>
            <thead>
              <tr>
                <th scope="col">Goal</th>
                <th scope="col">Waiting for</th>
                <th scope="col">Detail</th>
              </tr>
            </thead>
            <tbody>
              {list.map((run) => (
                <tr key={run.runId} data-run={run.runId}>
                  <td>
                    <a href={`#/run/${run.runId}`}>{run.spec?.goal.slice(0, 120) || run.runId}</a>
                  </td>
                  <td>{age(run.updatedAt, now)}</td>
                  <td>{run.state?.pause?.detail.slice(0, 200)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ))}
    </main>
  );
}

function Runs({ client }: { client: ReinClient }) {
  const [stage, setStage] = useState(0);
  const [text, setText] = useState("");
  const [tokens, setTokens] = useState<string[]>([""]);
  const [page, setPage] = useState<{ runs: Run[]; next: string } | null>(null);
  const [error, setError] = useState("");
  const token = tokens[tokens.length - 1];
  useEffect(() => {
    client
      .list({ stage, pageSize: 50, pageToken: token })
      .then((r) => {
        setPage({ runs: r.runs, next: r.nextPageToken });
        setError("");
      })
      .catch((e) => setError(errorText(e)));
  }, [client, stage, token]);
  const shown = (page?.runs ?? []).filter(
    (r) => !text || r.spec?.goal.toLowerCase().includes(text.toLowerCase()) || r.runId.includes(text),
  );
  return (
    <main>
      <h2>Runs</h2>
      <label>
        Stage{" "}
        <select
          value={stage}
          onChange={(e) => {
            setStage(Number(e.currentTarget.value));
            setTokens([""]);
          }}
        >
          <option value={0}>any</option>
          {Object.values(Stage)
            .filter((v): v is Stage => typeof v === "number" && v !== 0)
            .map((s) => (
              <option value={s}>{stageName(s)}</option>
            ))}
        </select>
      </label>
      <label>
        Goal or run id contains <input value={text} onInput={(e) => setText(e.currentTarget.value)} />
      </label>
      {error && <p class="error" role="alert">{error}</p>}
      <table>
        <thead>
          <tr>
            <th scope="col">Goal</th>
            <th scope="col">Stage</th>
            <th scope="col">Updated</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((run) => (
            <tr key={run.runId}>
              <td>
                <a href={`#/run/${run.runId}`}>{run.spec?.goal.slice(0, 120) || run.runId}</a>
              </td>
              <td>
                {stageName(run.state?.stage ?? 0)}
                {run.state?.stage === Stage.PAUSED ? ` (${pauseLabel(run.state.pause)})` : ""}
              </td>
              <td>{age(run.updatedAt)} ago</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p>
        <button disabled={tokens.length < 2} onClick={() => setTokens(tokens.slice(0, -1))}>
          Newer
        </button>{" "}
        <button disabled={!page?.next} onClick={() => page && setTokens([...tokens, page.next])}>
          Older
        </button>
      </p>
    </main>
  );
}

function App() {
  const [token, setToken] = useState<string | null>(savedToken());
  const [roles, setRoles] = useState<Roles | null>(null);
  const [error, setError] = useState("");
  const client = useMemo(() => (token === null ? null : makeClient(token)), [token]);
  const hash = useHash();
  useEffect(() => {
    if (!client) return;
    probeRoles(client)
      .then((r) => {
        setRoles(r);
        setError("");
      })
      .catch((e) => {
        setError(errorText(e));
        saveToken(null);
        setToken(null);
      });
  }, [client]);
  // "n": the next paused run (the oldest, other than this one).
  useEffect(() => {
    if (!client) return;
    const onKey = async (e: KeyboardEvent) => {
      const target = e.target as HTMLElement;
      if (e.key !== "n" || e.ctrlKey || e.metaKey || e.altKey || /INPUT|TEXTAREA|SELECT/.test(target.tagName)) return;
      const current = location.hash.split("/")[2];
      const next = (await pausedRuns(client)).find((r) => r.runId !== current);
      if (next) location.hash = `#/run/${next.runId}`;
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, [client]);
  if (!client || !roles) {
    return (
      <>
        <header>
          <h1>rein console</h1>
        </header>
        {client && !error ? <main>Signing in…</main> : <SignIn error={error} onToken={(t) => { saveToken(t); setToken(t); }} />}
      </>
    );
  }
  const parts = hash.replace(/^#\/?/, "").split("/");
  let page;
  if (parts[0] === "run" && parts[1]) {
    const seq = parts[2] === "e" && parts[3] ? BigInt(parts[3]) : undefined;
    page = <RunPage key={parts[1]} client={client} roles={roles} runId={parts[1]} focusSeq={seq} />;
  } else if (parts[0] === "compare" && parts[1] && parts[2]) {
    page = <ComparePage key={`${parts[1]}/${parts[2]}`} client={client} a={parts[1]} b={parts[2]} />;
  } else if (parts[0] === "runs") {
    page = <Runs client={client} />;
  } else {
    page = <Inbox client={client} />;
  }
  const roleNames = ["viewer", roles.operator && "operator", roles.reviewer && "reviewer"].filter(Boolean).join(", ");
  return (
    <>
      <header>
        <h1>rein console</h1>
        <nav aria-label="Main">
          <a href="#/inbox">Inbox</a>
          <a href="#/runs">Runs</a>
        </nav>
        <span class="muted" id="roles">
          roles: {roleNames}
        </span>
        <button
          onClick={() => {
            saveToken(null);
            setToken(null);
            setRoles(null);
          }}
        >
          Sign out
        </button>
      </header>
      {page}
    </>
  );
}

render(<App />, document.getElementById("app")!);
