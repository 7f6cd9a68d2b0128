/**
 * The application protocol of an intercepted tunnel, chosen from the client's ALPN offer
 * (RFC 7301 §3.2). The requests inside a tunnel are served by Node's HTTP/1 parser: HTTP/1.1,
 * or HTTP/1.0 for a client that offers only that (`curl --http1.0`, which sends ALPN `http/1.0`).
 * HTTP/2 (`h2`) is not supported: a client that offers nothing the proxy speaks is refused with
 * the `no_application_protocol` alert (RFC 7301 §3.2), and the refusal says why.
 */

/** ALPN identifiers of the HTTP/1 versions served in tunnels, in the proxy's preference order (IANA registry, RFC 7301 §6). */
export const TUNNEL_PROTOCOLS: readonly string[] = ['http/1.1', 'http/1.0'];

/** The protocol for a client that offered `offered` (ALPN identifiers, the client's order), or undefined when it offered none the proxy speaks. */
export function chooseTunnelProtocol(offered: readonly string[]): string | undefined {
  for (const protocol of TUNNEL_PROTOCOLS) if (offered.includes(protocol)) return protocol;
  return undefined;
}

/** Why an ALPN offer was refused: its `tls-client-error` code and message. */
export interface AlpnRefusal {
  /** `ALPN_HTTP2_ONLY` (HTTP/2 offered, no HTTP/1) or `ALPN_NO_HTTP1` (nothing known offered). */
  code: 'ALPN_HTTP2_ONLY' | 'ALPN_NO_HTTP1';
  message: string;
}

/** The refusal of an offer {@link chooseTunnelProtocol} found nothing in, in plain words. */
export function alpnRefusalOf(offered: readonly string[]): AlpnRefusal {
  const list = offered.slice(0, 8).join(', ').slice(0, 200);
  if (offered.includes('h2') || offered.includes('h2c')) {
    return {
      code: 'ALPN_HTTP2_ONLY',
      message: `the client offered only HTTP/2 (ALPN ${list}): HTTP/2 is not supported in intercepted tunnels; the client must use HTTP/1.1 (e.g. curl --http1.1)`,
    };
  }
  return { code: 'ALPN_NO_HTTP1', message: `the client offered no HTTP/1 protocol (ALPN ${list}): intercepted tunnels speak HTTP/1.1 and HTTP/1.0 only` };
}
