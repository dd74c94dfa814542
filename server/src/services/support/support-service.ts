/**
 * Contact support (SPEC 3, 5): a message, contact information and up to 8 images, sent with the
 * log bundle to the configured support URL, or, when none is configured, kept as a support
 * bundle under <data>/support/ (the newest SUPPORT_BUNDLES_KEPT) for the admin to download.
 */
import { readdir, readFile, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { isPlainText, PLAIN_TEXT_PUNCTUATION } from '@kvm/protocol';
import { IsBusyError, NotFoundError, ServiceUnavailableError, ValidatorError } from '../../errors';
import type { Logger } from '../../log';
import { atomicWriteFile } from '../../storage/atomic';
import { buildZip } from '../../storage/zip';
import { ExclusiveRegion } from '../../sync/exclusive-region';
import { stamp, type LogBundle } from './log-bundle';

export const SUPPORT_MAX_IMAGES = 8;
/** SPEC's "10 MB" in decimal megabytes: 10,000,000 bytes (not 10 MiB). */
export const SUPPORT_IMAGE_MAX_BYTES = 10_000_000;
/** The refusal of a larger image, in the words SPEC uses and in bytes. */
export const SUPPORT_IMAGE_TOO_LARGE = 'an image may be at most 10 MB (10,000,000 bytes)';
export const SUPPORT_MESSAGE_MAX_CHARS = 10_000;
export const SUPPORT_CONTACT_MAX_CHARS = 256;
export const SUPPORT_BUNDLES_KEPT = 5;
export const SUPPORT_SEND_TIMEOUT_MS = 30_000;
const BUNDLE_NAME = /^support_\d{8}_\d{6}(?:_\d{1,3})?\.zip$/;

export class SupportIsBusyError extends IsBusyError {
  static override readonly defaultMessage = 'A support request is already being sent';
}
export class SupportSendError extends ServiceUnavailableError {}

export interface SupportImage {
  /** The form field (`image1`...). */
  field: string;
  filename: string;
  data: Buffer;
}

export interface SupportRequest {
  message: string;
  contact: string;
  images: SupportImage[];
}

/** The image type by its first bytes (the extension alone proves nothing). */
export function imageType(data: Buffer): 'jpg' | 'png' | 'gif' | null {
  if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return 'jpg';
  if (data.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    return 'png';
  const head = data.subarray(0, 6).toString('latin1');
  if (head === 'GIF87a' || head === 'GIF89a') return 'gif';
  return null;
}

const EXTENSION = /\.(jpe?g|png|gif)$/i;

/** SPEC 5's help form rules; throws naming the argument. */
export function validateSupport(req: SupportRequest): void {
  if (req.message.trim() === '') throw new ValidatorError('message: a message is required');
  if (req.message.length > SUPPORT_MESSAGE_MAX_CHARS)
    throw new ValidatorError(`message: at most ${SUPPORT_MESSAGE_MAX_CHARS} characters`);
  if (req.contact.length > SUPPORT_CONTACT_MAX_CHARS)
    throw new ValidatorError(`contact: at most ${SUPPORT_CONTACT_MAX_CHARS} characters`);
  // SPEC 5's text pattern: an email address or a phone number reaches whoever reads the bundle.
  if (!isPlainText(req.contact))
    throw new ValidatorError(
      `contact: only ASCII letters, digits, spaces and ${PLAIN_TEXT_PUNCTUATION}`,
    );
  if (req.images.length > SUPPORT_MAX_IMAGES)
    throw new ValidatorError(`images: at most ${SUPPORT_MAX_IMAGES} images`);
  for (const image of req.images) {
    if (image.data.length > SUPPORT_IMAGE_MAX_BYTES)
      throw new ValidatorError(`${image.field}: ${SUPPORT_IMAGE_TOO_LARGE}`);
    if (!EXTENSION.test(image.filename) || imageType(image.data) === null)
      throw new ValidatorError(`${image.field}: only JPG, JPEG, GIF or PNG images`);
  }
}

export interface SupportDeps {
  dataDir: string;
  /** The support server; null keeps bundles on the device. */
  url: string | null;
  bundle: LogBundle;
  log: Logger;
  timeoutMs?: number;
}

export type SupportResult =
  { delivered: 'sent'; url: string } | { delivered: 'saved'; bundle: string };

export class SupportService {
  /** One request at a time: a second while one is built or sent is refused (409). */
  readonly region = new ExclusiveRegion(() => new SupportIsBusyError());

  constructor(private readonly deps: SupportDeps) {}

  get dir(): string {
    return join(this.deps.dataDir, 'support');
  }

  async submit(req: SupportRequest): Promise<SupportResult> {
    validateSupport(req);
    return this.region.enter(async () => {
      const logs = await this.deps.bundle.build();
      if (this.deps.url) return this.send(this.deps.url, req, logs);
      return { delivered: 'saved', bundle: await this.save(req, logs) };
    });
  }

  private async send(
    url: string,
    req: SupportRequest,
    logs: { name: string; zip: Buffer },
  ): Promise<SupportResult> {
    const form = new FormData();
    form.set('message', req.message);
    form.set('contact', req.contact);
    // Blob parts must be ArrayBuffer-backed views (a Buffer may sit on a shared pool).
    form.set('log', new Blob([new Uint8Array(logs.zip)], { type: 'application/zip' }), logs.name);
    for (const image of req.images) {
      form.set(image.field, new Blob([new Uint8Array(image.data)]), image.filename);
    }
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        body: form,
        signal: AbortSignal.timeout(this.deps.timeoutMs ?? SUPPORT_SEND_TIMEOUT_MS),
      });
      await res.arrayBuffer().catch(() => undefined);
    } catch (err) {
      this.deps.log.warn({ err: (err as Error).message }, 'support: send failed');
      throw new SupportSendError(
        `The support server could not be reached: ${(err as Error).message}`,
      );
    }
    if (!res.ok) throw new SupportSendError(`The support server answered HTTP ${res.status}`);
    this.deps.log.info({}, 'support: request sent');
    return { delivered: 'sent', url };
  }

  private async save(req: SupportRequest, logs: { name: string; zip: Buffer }): Promise<string> {
    let name = `support_${stamp()}.zip`;
    const existing = new Set(await this.list().then((l) => l.map((b) => b.name)));
    for (let i = 1; existing.has(name) && i < 1000; i++) name = `support_${stamp()}_${i}.zip`;
    const zip = buildZip([
      { name: 'message.txt', data: `${req.message}\n` },
      { name: 'contact.txt', data: `${req.contact}\n` },
      { name: logs.name, data: logs.zip },
      ...req.images.map((i) => ({
        name: `images/${i.field}_${i.filename.replace(/[^\w.-]/g, '_')}`,
        data: i.data,
      })),
    ]);
    await atomicWriteFile(join(this.dir, name), zip);
    const all = await this.list();
    for (const old of all.slice(SUPPORT_BUNDLES_KEPT))
      await unlink(join(this.dir, old.name)).catch(() => undefined);
    this.deps.log.info({ bundle: name }, 'support: bundle saved');
    return name;
  }

  /** Saved bundles, newest first. */
  async list(): Promise<Array<{ name: string; size: number }>> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return [];
    }
    const out = [];
    for (const name of names.filter((n) => BUNDLE_NAME.test(n))) {
      const s = await stat(join(this.dir, name)).catch(() => null);
      if (s) out.push({ name, size: s.size, mtime: s.mtimeMs });
    }
    out.sort((a, b) => b.mtime - a.mtime || b.name.localeCompare(a.name));
    return out.map(({ name, size }) => ({ name, size }));
  }

  async read(name: string): Promise<Buffer> {
    if (!BUNDLE_NAME.test(name))
      throw new NotFoundError(`No such support bundle: ${name.slice(0, 64)}`);
    try {
      return await readFile(join(this.dir, name));
    } catch {
      throw new NotFoundError(`No such support bundle: ${name}`);
    }
  }
}
