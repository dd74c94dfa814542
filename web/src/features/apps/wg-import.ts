/**
 * The WireGuard configuration's three ways in (issue 27): pasted text, a `.conf` file, or a QR
 * code in a picture (the mobile apps' export), decoded here with jsqr. Nothing is sent or kept:
 * the text goes into the editor, and from there to the device once.
 */
import { WG_CONFIG_MAX_BYTES } from '@kvm/protocol/wireguard';

/** A picture larger than this is refused before decoding. */
export const QR_IMAGE_MAX_BYTES = 10 * 1024 * 1024;
/** Pictures are scaled down to this many pixels on their longer side before decoding. */
const QR_MAX_SIDE = 1600;

export interface Pixels {
  data: Uint8ClampedArray;
  width: number;
  height: number;
}

export class ImportError extends Error {
  override readonly name = 'ImportError';
  constructor(readonly reason: 'too_large' | 'not_text' | 'no_qr' | 'bad_image') {
    super(reason);
  }
}

async function browserPixels(file: Blob): Promise<Pixels> {
  let bitmap: ImageBitmap;
  try {
    bitmap = await createImageBitmap(file);
  } catch {
    throw new ImportError('bad_image');
  }
  const scale = Math.min(1, QR_MAX_SIDE / Math.max(bitmap.width, bitmap.height));
  const width = Math.max(1, Math.round(bitmap.width * scale));
  const height = Math.max(1, Math.round(bitmap.height * scale));
  const canvas = document.createElement('canvas');
  canvas.width = width;
  canvas.height = height;
  const context = canvas.getContext('2d');
  if (!context) throw new ImportError('bad_image');
  context.drawImage(bitmap, 0, 0, width, height);
  bitmap.close();
  const image = context.getImageData(0, 0, width, height);
  return { data: image.data, width, height };
}

/** How a picture becomes pixels (a canvas in the browser; tests decode PNGs themselves). */
export const imageReader: { read: (file: Blob) => Promise<Pixels> } = { read: browserPixels };

/** The text of a QR code in a picture. */
export async function decodeQrImage(file: Blob): Promise<string> {
  if (file.size > QR_IMAGE_MAX_BYTES) throw new ImportError('too_large');
  const pixels = await imageReader.read(file);
  const mod = await import('jsqr');
  // jsqr is CommonJS: the function sits on `default` under Vite's interop.
  const jsQR = ((mod as { default?: unknown }).default ?? mod) as typeof mod.default;
  const found = jsQR(pixels.data, pixels.width, pixels.height, {
    inversionAttempts: 'attemptBoth',
  });
  if (!found) throw new ImportError('no_qr');
  return found.data;
}

/** A `.conf` file's text (UTF-8, at most WG_CONFIG_MAX_BYTES). */
export async function readConfFile(file: Blob): Promise<string> {
  if (file.size > WG_CONFIG_MAX_BYTES) throw new ImportError('too_large');
  const text = await file.text();
  if (text.includes('\u0000')) throw new ImportError('not_text');
  return text;
}
