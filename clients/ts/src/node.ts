// A ReinClient for Node: HTTP/1.1 or HTTP/2, TLS and client certificates, a bearer token.
import { createConnectTransport } from "@connectrpc/connect-node";
import { bearerToken, ReinClient } from "./index.js";

export interface NodeClientOptions {
  // The router's HTTP port, e.g. "http://127.0.0.1:8080" or "https://rein.example:8443".
  baseUrl: string;
  token?: string;
  // PEM text: the CA that signs the router's certificate, and this client's own certificate
  // and key (when the router requires client certificates).
  ca?: string;
  cert?: string;
  key?: string;
  // Binary protobuf instead of JSON on the wire.
  binary?: boolean;
}

export function nodeClient(options: NodeClientOptions): ReinClient {
  const transport = createConnectTransport({
    baseUrl: options.baseUrl,
    httpVersion: "1.1",
    useBinaryFormat: options.binary ?? false,
    interceptors: options.token ? [bearerToken(options.token)] : [],
    nodeOptions: { ca: options.ca, cert: options.cert, key: options.key },
  });
  return new ReinClient(transport);
}
