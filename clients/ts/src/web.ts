// A ReinClient for browsers (fetch), on the page's own origin by default.
import { createConnectTransport } from "@connectrpc/connect-web";
import { bearerToken, ReinClient } from "./index.js";

export function webClient(options: { baseUrl?: string; token?: string; binary?: boolean } = {}): ReinClient {
  const transport = createConnectTransport({
    baseUrl: options.baseUrl ?? globalThis.location.origin,
    useBinaryFormat: options.binary ?? false,
    interceptors: options.token ? [bearerToken(options.token)] : [],
  });
  return new ReinClient(transport);
}
