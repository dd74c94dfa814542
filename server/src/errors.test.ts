import { describe, expect, it } from 'vitest';
import { toHttp } from './errors';

const errno = (code: string, message: string): Error => Object.assign(new Error(message), { code });

describe('toHttp for errors Node raises', () => {
  it('a full disk is 507 with an honest message, not the errno text with a path', () => {
    for (const code of ['ENOSPC', 'EDQUOT']) {
      const answer = toHttp(errno(code, `${code}: no space left on device, write '/data/x.tmp'`));
      expect(answer.status).toBe(507);
      expect(answer.body.result).toEqual({
        error: 'InsufficientStorageError',
        error_msg: "The device's storage is full",
      });
    }
  });

  it('a read-only or forbidden data folder is 500 without the path', () => {
    for (const code of ['EROFS', 'EACCES', 'EPERM', 'EIO']) {
      const answer = toHttp(errno(code, `${code}: open '/var/lib/kvm/auth.json'`));
      expect(answer.status).toBe(500);
      expect(answer.body.result.error).toBe('InternalError');
      expect(answer.body.result.error_msg).not.toContain('/var/lib');
      expect(answer.body.result.error_msg).not.toBe('Server got itself in trouble');
    }
  });

  it("the HTTP parser's errors are the client's: 400, 431 for oversize headers, 408 for time", () => {
    const parse = Object.assign(errno('HPE_INVALID_METHOD', 'Parse Error: Invalid method'), {
      reason: 'Invalid method encountered',
    });
    expect(toHttp(parse)).toEqual({
      status: 400,
      body: {
        ok: false,
        result: {
          error: 'ValidatorError',
          error_msg: 'Malformed HTTP request: Invalid method encountered',
        },
      },
    });
    expect(toHttp(errno('HPE_HEADER_OVERFLOW', 'x')).status).toBe(431);
    expect(toHttp(errno('ERR_HTTP_REQUEST_TIMEOUT', 'x')).status).toBe(408);
  });

  it("busboy's parse errors (no code) are a malformed body", () => {
    for (const message of [
      'Multipart: Boundary not found',
      'Unexpected end of multipart data',
      'Part terminated early due to unexpected end of multipart data',
    ]) {
      expect(toHttp(new Error(message)).status).toBe(400);
    }
    expect(toHttp(new Error('something else')).status).toBe(500);
  });
});
