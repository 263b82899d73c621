// A run and its log, live: GetRun, then WatchRun from the first event, resumed from the last
// seq received whenever the stream breaks (a router restart, a takeover), so every event is
// there exactly once.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { errorText, ReinClient, type Run, type RunEvent } from "./api";

export type Live = "connecting" | "live" | "reconnecting" | "ended" | "disconnected";

export interface RunLog {
  run: Run | null;
  events: RunEvent[];
  live: Live;
  error: string;
  setError: (text: string) => void;
  // Shows `fresh` unless the page already shows a newer version.
  onFresh: (fresh: Run) => void;
}

export function useRunLog(client: ReinClient, runId: string): RunLog {
  const [run, setRun] = useState<Run | null>(null);
  const [events, setEvents] = useState<RunEvent[]>([]);
  const [error, setError] = useState("");
  const [live, setLive] = useState<Live>("connecting");
  const latest = useRef(-1n);
  const onFresh = useCallback((fresh: Run) => {
    const version = fresh.state?.version ?? 0n;
    if (version >= latest.current) {
      latest.current = version;
      setRun(fresh);
    }
  }, []);
  useEffect(() => {
    latest.current = -1n;
    setRun(null);
    setEvents([]);
    setLive("connecting");
    const stop = new AbortController();
    const refresh = () =>
      client.get(runId).then((r) => !stop.signal.aborted && onFresh(r)).catch((e) => !stop.signal.aborted && setError(errorText(e)));
    refresh();
    let buffer: RunEvent[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    let since = 0;  // when the oldest event not yet shown arrived
    // Events arrive in bursts (a whole log on open): shown once the stream has been quiet for
    // 60 ms, or 500 ms after the oldest event not yet shown, so a log catching up re-renders
    // the page twice a second, not once per event.
    let last = 0;   // when the newest arrived
    const flush = () => {
      const now = performance.now();
      const wait = Math.min(last + 60 - now, since + 500 - now);
      if (wait > 0) {
        timer = setTimeout(flush, wait);
        return;
      }
      timer = undefined;
      const batch = buffer;
      buffer = [];
      setEvents((prev) => prev.concat(batch));
      refresh();
    };
    const schedule = () => {
      last = performance.now();
      if (buffer.length === 1) since = last;
      if (!timer) timer = setTimeout(flush, 60);
    };
    (async () => {
      try {
        const stream = client.watch(runId, {
          signal: stop.signal,
          maxRetries: 1000,
          onOpen: () => !stop.signal.aborted && setLive("live"),
          onRetry: () => !stop.signal.aborted && setLive("reconnecting"),
        });
        let decoded = 0;
        let turn = performance.now();
        for await (const event of stream) {
          // User Timing marks for the benchmark (router_service/console/bench): the first
          // event, and the end of the log of a run that has ended.
          if (decoded === 0) performance.mark("rein-first-event");
          buffer.push(event);
          schedule();
          // A log that arrived at once decodes in one go without this: give the page a turn
          // (paint, input) after 30 ms of decoding.
          decoded++;
          if (performance.now() - turn > 30) {
            await new Promise((r) => setTimeout(r, 0));
            turn = performance.now();
          }
        }
        if (!stop.signal.aborted) {
          performance.mark("rein-log-received");
          setLive("ended");
        }
      } catch (e) {
        if (!stop.signal.aborted) {
          setLive("disconnected");
          setError(`The live stream stopped. ${errorText(e)}`);
        }
      }
    })();
    return () => {
      stop.abort();
      if (timer) clearTimeout(timer);
    };
  }, [client, runId]);
  return { run, events, live, error, setError, onFresh };
}
