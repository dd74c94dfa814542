/**
 * The opening exchange of QEMU's sockets (QMP's greeting, RFB's handshake) under a deadline:
 * a peer that accepts the connection and then says nothing must not hold a driver's start.
 */

export interface OpenWithinOptions {
  timeoutMs: number;
  /** The error when `opened` does not settle in time. */
  timeoutError: () => Error;
  /** Steps after the opening (QMP's capabilities): their failure closes the client too. */
  then?: () => Promise<void>;
}

/**
 * Resolves with `client` once `opened` resolves (within `timeoutMs`) and `then` is done. On a
 * failure or the deadline the half-open client is closed before the error is thrown.
 */
export async function openWithin<C extends { close(): void }>(
  client: C,
  opened: Promise<void>,
  opts: OpenWithinOptions,
): Promise<C> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      opened,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(opts.timeoutError()), opts.timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    await opts.then?.();
  } catch (err) {
    client.close();
    throw err;
  } finally {
    clearTimeout(timer);
  }
  return client;
}
