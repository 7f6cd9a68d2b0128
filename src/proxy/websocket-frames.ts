/**
 * The client's side of a relayed WebSocket stream, read as frames (RFC 6455 §5.2) while it is
 * relayed byte for byte. After a 101 the proxy pipes the two sockets and sees no request any
 * more: a client that sent `GET /private HTTP/1.1` there instead of frames reached an origin that
 * answered 101 and went on parsing HTTP (an origin's front that relays upgrades to a backend
 * which did not switch: "WebSocket smuggling"), undecided. A client's frames are masked (§5.1: a
 * server MUST close the connection on an unmasked one), use the defined opcodes (§5.2: 0-2, 8-10),
 * set no RSV bit unless an extension was negotiated, and control frames are whole and at most 125
 * bytes (§5.5). An HTTP request line fails at its first byte (`G` = RSV1 set, opcode 7), and bytes
 * that pass are frame headers, which no HTTP parser reads as a request. Pure: no I/O.
 */

/** Longest frame header: 2 bytes, an 8-byte length, a 4-byte mask (RFC 6455 §5.2). */
const MAX_HEADER_BYTES = 14;

/** Reads a client's WebSocket byte stream frame by frame (lifecycle: one per relayed stream). */
export class ClientFrameReader {
  /** Payload bytes of the current frame still to pass before the next header. */
  private payloadLeft = 0;
  /** A header cut between chunks, kept until it is whole. */
  private readonly header = Buffer.alloc(MAX_HEADER_BYTES);
  private headerBytes = 0;
  private failure: string | undefined = undefined;

  /** @param allowsReservedBits true when the origin's 101 negotiated an extension (`Sec-WebSocket-Extensions`), which may use RSV1-3. */
  constructor(private readonly allowsReservedBits: boolean) {}

  /**
   * Reads the next `chunk` of the client's stream. Returns why it is no WebSocket frame stream
   * (and so for every later call), or undefined while it is one. Never throws.
   */
  read(chunk: Buffer): string | undefined {
    let at = 0;
    while (this.failure === undefined && at < chunk.length) {
      if (this.payloadLeft > 0) {
        const skipped = Math.min(this.payloadLeft, chunk.length - at);
        this.payloadLeft -= skipped;
        at += skipped;
        continue;
      }
      this.header[this.headerBytes++] = chunk[at++] as number;
      // The first byte alone tells reserved bits and opcodes: an HTTP method fails at its first letter.
      if (this.headerBytes === 1) {
        this.failure = this.problemOfFirstByte();
        continue;
      }
      const needed = this.headerLength();
      if (needed === undefined || this.headerBytes < needed) continue;
      this.failure = this.problemOfHeader();
      this.headerBytes = 0;
    }
    return this.failure;
  }

  /** The length of the header being read, once its first two bytes are known. */
  private headerLength(): number | undefined {
    if (this.headerBytes < 2) return undefined;
    const lengthCode = (this.header[1] as number) & 0x7f;
    const extended = lengthCode === 126 ? 2 : lengthCode === 127 ? 8 : 0;
    const masked = ((this.header[1] as number) & 0x80) !== 0 ? 4 : 0;
    return 2 + extended + masked;
  }

  /** Checks a header's first byte: reserved bits and the opcode; returns the problem, if any. */
  private problemOfFirstByte(): string | undefined {
    const first = this.header[0] as number;
    const opcode = first & 0x0f;
    if ((first & 0x70) !== 0 && !this.allowsReservedBits) return `a frame with reserved bits set (first byte 0x${first.toString(16)}) and no extension negotiated`;
    if (!(opcode <= 2 || (opcode >= 8 && opcode <= 10))) return `a frame with the reserved opcode ${opcode} (first byte 0x${first.toString(16)})`;
    return undefined;
  }

  /** Checks a whole header (its first byte passed) and sets the payload to pass; returns the problem, if any. */
  private problemOfHeader(): string | undefined {
    const first = this.header[0] as number;
    const second = this.header[1] as number;
    const opcode = first & 0x0f;
    if ((second & 0x80) === 0) return 'an unmasked frame (a client masks every frame, RFC 6455 §5.1)';
    const lengthCode = second & 0x7f;
    let length = lengthCode;
    if (lengthCode === 126) length = this.header.readUInt16BE(2);
    else if (lengthCode === 127) {
      const high = this.header.readUInt32BE(2);
      if (high > 0x1fffff) return 'a frame longer than 2^53 bytes';
      length = high * 2 ** 32 + this.header.readUInt32BE(6);
    }
    if (opcode >= 8 && (length > 125 || (first & 0x80) === 0)) return 'a control frame longer than 125 bytes or fragmented (RFC 6455 §5.5)';
    this.payloadLeft = length;
    return undefined;
  }
}
