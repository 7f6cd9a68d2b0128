/**
 * WebSocket frames for the relay tests: the proxy reads the client's side of a relayed stream
 * as frames (src/proxy/websocket-frames.ts), so a test client sends real ones.
 */

/** A client's text frame (RFC 6455 §5.2): FIN, opcode 1, masked with the all-zero key (the payload as written); `text` under 126 bytes. */
export function maskedTextFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length, 0, 0, 0, 0]), payload]);
}

/** The payload of a frame made by {@link maskedTextFrame} (what an origin echoes), as text. */
export function framePayloadText(frame: Buffer): string {
  return frame.subarray(6).toString();
}
