/**
 * The protobuf wire format, as far as a Kubernetes request body needs it: varints, fixed 32/64-bit
 * values, length-delimited fields and groups to skip. Every failure is a {@link WireError} worded as
 * the gogo-generated `Unmarshal` of k8s.io/api words it (`unexpected EOF`, `proto: integer overflow`),
 * so a malformed body becomes the apiserver's 400, never an exception the server does not expect.
 */

/** A body the wire format cannot read. */
export class WireError extends Error {}

export const WIRE_VARINT = 0;
export const WIRE_FIXED64 = 1;
export const WIRE_BYTES = 2;
export const WIRE_START_GROUP = 3;
export const WIRE_END_GROUP = 4;
export const WIRE_FIXED32 = 5;

/** A cursor over one message's bytes (`end` exclusive). */
export class WireReader {
  readonly buf: Buffer;
  pos: number;
  readonly end: number;

  constructor(buf: Buffer, pos = 0, end = buf.length) {
    this.buf = buf;
    this.pos = pos;
    this.end = end;
  }

  done(): boolean {
    return this.pos >= this.end;
  }

  /** A varint of at most 10 bytes (64 bits), as an unsigned 64-bit value. */
  varint(): bigint {
    let result = 0n;
    for (let shift = 0n; ; shift += 7n) {
      // gogo checks the shift before the length: an 11th byte is an overflow even at the end.
      if (shift >= 64n) throw new WireError('proto: integer overflow');
      if (this.pos >= this.end) throw new WireError('unexpected EOF');
      const b = this.buf[this.pos++]!;
      result |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return BigInt.asUintN(64, result);
    }
  }

  /** A field key: its number and wire type. */
  key(): { field: number; wire: number } {
    const k = this.varint();
    // Go reads the key into an int (64-bit): the field number is everything above the low 3 bits.
    const field = Number(BigInt.asIntN(64, k) >> 3n);
    return { field, wire: Number(k & 7n) };
  }

  /** The extent of a length-delimited value; the cursor moves past it. */
  bytes(): { start: number; end: number } {
    const n = BigInt.asIntN(64, this.varint());
    if (n < 0n) throw new WireError('proto: negative length found during unmarshaling');
    const start = this.pos;
    if (n > BigInt(this.end - start)) throw new WireError('unexpected EOF');
    this.pos = start + Number(n);
    return { start, end: this.pos };
  }

  fixed32(): number {
    if (this.end - this.pos < 4) throw new WireError('unexpected EOF');
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }

  fixed64(): bigint {
    if (this.end - this.pos < 8) throw new WireError('unexpected EOF');
    const v = this.buf.readBigUInt64LE(this.pos);
    this.pos += 8;
    return v;
  }

  /** Skips one value of `wire` type (an unknown field), groups included, as gogo's `skipGenerated` does. */
  skip(wire: number): void {
    let depth = 0;
    for (;;) {
      switch (wire) {
        case WIRE_VARINT:
          this.varint();
          break;
        case WIRE_FIXED64:
          this.fixed64();
          break;
        case WIRE_BYTES:
          this.bytes();
          break;
        case WIRE_START_GROUP:
          depth++;
          break;
        case WIRE_END_GROUP:
          if (depth === 0) throw new WireError('proto: unexpected end of group');
          depth--;
          break;
        case WIRE_FIXED32:
          this.fixed32();
          break;
        default:
          throw new WireError(`proto: illegal wireType ${wire}`);
      }
      if (depth === 0) return;
      wire = this.key().wire;
    }
  }
}
