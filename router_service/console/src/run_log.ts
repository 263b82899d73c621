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
    // Events arrive in bursts (a whole log on open): render them in batches.
    const flush = () => {
      timer = undefined;
      const batch = buffer;
      buffer = [];
      setEvents((prev) => prev.concat(batch));
      refresh();
    };
    (async () => {
      try {
        const stream = client.watch(runId, {
          signal: stop.signal,
          maxRetries: 1000,
          onOpen: () => !stop.signal.aborted && setLive("live"),
          onRetry: () => !stop.signal.aborted && setLive("reconnecting"),
        });
        for await (const event of stream) {
          buffer.push(event);
          if (!timer) timer = setTimeout(flush, 60);
        }
        if (!stop.signal.aborted) setLive("ended");
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
