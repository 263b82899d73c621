// The console's connection to the router: the TypeScript client on the page's own origin,
// the token of this browser session, and the caller's roles.
import { Code, ConnectError, ReinClient, ReviewConflictError } from "../../../clients/ts/src/index";
import { webClient } from "../../../clients/ts/src/web";

export * from "../../../clients/ts/src/index";

export interface Roles {
  operator: boolean;
  reviewer: boolean;
}

// Kept for the browser session only (sessionStorage), never in a URL or a cookie.
const TOKEN_KEY = "rein.token";

export function savedToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function saveToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

// Binary (application/proto): a 10,000-event log decodes several times faster than in JSON
// (docs/HTTP_API.md, Figures); the raw JSON view converts each event itself.
export function makeClient(token: string): ReinClient {
  return webClient({ token: token || undefined, binary: true });
}

// The roles of the token, asked of the router itself: each probe is a call the role allows
// that can change nothing (a start without a goal, a review of no run); the router refuses
// it with permission_denied before it looks at the request when the role is missing. A valid
// token's refusals do not count toward the router's failed-login limit.
export async function probeRoles(client: ReinClient): Promise<Roles> {
  await client.list({ pageSize: 1 });  // throws unauthenticated for a bad token
  const allowed = async (call: () => Promise<unknown>) => {
    try {
      await call();
      return true;
    } catch (error) {
      return ConnectError.from(error).code !== Code.PermissionDenied;
    }
  };
  const [operator, reviewer] = await Promise.all([
    allowed(() => client.router.startRun({})),
    allowed(() => client.router.resumeRun({})),
  ]);
  return { operator, reviewer };
}

// An error from the API in words.
export function errorText(error: unknown): string {
  if (error instanceof ReviewConflictError) return error.message;
  const e = ConnectError.from(error);
  const hint: Partial<Record<Code, string>> = {
    [Code.Unauthenticated]: "The router refused the token (sign in again).",
    [Code.PermissionDenied]: "Your token's roles do not allow this.",
    [Code.FailedPrecondition]: "The run is not in a state that allows this.",
    [Code.NotFound]: "Not found.",
    [Code.Unavailable]: "The router cannot be reached.",
    [Code.InvalidArgument]: "The request was refused as invalid.",
    [Code.ResourceExhausted]: "Too many requests or streams.",
  };
  return `${hint[e.code] ?? "The call failed."} ${Code[e.code]}: ${e.rawMessage}`;
}
