/**
 * The names of the image storage: the protocol's rules (`checkImageName`, `joinImageName`)
 * plus what the storage itself needs (Unicode NFC, no invisible characters, a marker that fits
 * NAME_MAX). A name that passes can never leave the storage folder (storage.ts).
 */
import { MSD_NAME_MAX_BYTES, checkImageName, checkImagePrefix, joinImageName } from '@kvm/protocol';
import { fail, str } from '../../validators';
import { markerName } from './storage';

/**
 * The longest last segment of a new image name, bytes of UTF-8: its marker
 * `.__<name>.incomplete` must fit NAME_MAX (255).
 */
export const MSD_IMAGE_BASE_MAX_BYTES = MSD_NAME_MAX_BYTES - Buffer.byteLength(markerName(''));

/**
 * Zero-width and bidirectional controls: a name holding one shows as another name (an `.iso`
 * that reads `.exe`, two names that look the same).
 */
const INVISIBLE = /[\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/u;

/**
 * Why a new name is refused beyond the protocol's rules, or null: it must be in Unicode NFC
 * (else `é` composed and decomposed would be two images that look the same) and hold no
 * invisible or direction-changing character.
 */
function unicodeRefusal(text: string): string | null {
  if (text.normalize('NFC') !== text) return 'not in Unicode NFC form: send composed characters';
  if (INVISIBLE.test(text)) return 'an invisible or direction-changing character';
  return null;
}

/**
 * The storage name of a new image from `prefix` and `image` (protocol rules, Unicode NFC, no
 * invisible characters, a file name whose marker fits NAME_MAX), or a ValidatorError.
 */
export function imageNameOf(image: string, prefix: string): string {
  const badPrefix = checkImagePrefix(prefix) ?? unicodeRefusal(prefix);
  if (badPrefix) fail('prefix', prefix, `prefix (${badPrefix})`);
  const badImage = unicodeRefusal(image);
  if (badImage) fail('image', image, `image name (${badImage})`);
  const joined = joinImageName(prefix, image);
  if (!joined.ok) fail('image', image, `image name (${joined.reason})`);
  const base = joined.name.split('/').pop() ?? '';
  if (Buffer.byteLength(base) > MSD_IMAGE_BASE_MAX_BYTES) {
    fail(
      'image',
      image,
      `image name (the file name is longer than ${MSD_IMAGE_BASE_MAX_BYTES} bytes)`,
    );
  }
  return joined.name;
}

/** An existing image's name argument (`remove`, `set_params`, `read`). */
export function storedName(value: unknown): string {
  const name = str('image', value);
  const bad = checkImageName(name);
  if (bad) fail('image', name, `image name (${bad})`);
  return name;
}
