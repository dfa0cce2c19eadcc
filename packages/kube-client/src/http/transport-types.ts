/**
 * The transport contract: what the client hands a {@link Transport} and what it gets back. Types
 * only, so the client, the default transport (`transport.ts`) and the bare-socket watch reader
 * (`watch-stream.ts`) all name them without importing one another.
 */

/** One HTTP request, as the client hands it to a {@link Transport}. */
export interface TransportRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  /** The serialised body of a write. */
  readonly body?: string | undefined;
  /** Aborts the request, also while connecting and while the body streams. */
  readonly signal: AbortSignal;
  /**
   * The body is a long stream (a WATCH) read piece by piece, and the reader is done with each piece
   * when it asks for the next: the transport may then reuse that piece's memory. A reader that
   * keeps a piece copies it.
   */
  readonly stream?: boolean | undefined;
  /**
   * With `stream`: the body is not long but read whole by the client (a LIST page), each piece
   * copied before the next is asked for, and nothing of it is kept once the response is closed.
   * The transport may then reuse its read memory for the next such request too.
   */
  readonly readWhole?: boolean | undefined;
}

/** One HTTP response: the status, the headers, and the body as a byte stream. */
export interface TransportResponse {
  readonly status: number;
  /** A header's value (names are case-insensitive); `undefined` when absent. */
  header(name: string): string | undefined;
  /** The body; read it once. */
  readonly body: AsyncIterable<Uint8Array | string>;
  /** Releases the connection when the body is not read to its end; idempotent. */
  close(): void;
}

/**
 * What the client sends requests through. The default is `httpTransport` (`transport.ts`); tests inject a fake,
 * so every verb, error and retry is exercised without a socket.
 */
export type Transport = (request: TransportRequest) => Promise<TransportResponse>;
