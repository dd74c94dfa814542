import { describe, expect, it } from 'vitest';
import {
  ApiError,
  BadRequestError,
  ForbiddenError,
  IsBusyError,
  NotFoundError,
  RateLimitError,
  ServiceUnavailableError,
  toHttp,
  ValidatorError,
} from './errors';

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

describe('the error categories', () => {
  class ExampleBusyError extends IsBusyError {}
  class ExampleOperationError extends BadRequestError {}
  class ExampleNotFoundError extends NotFoundError {}

  it("the wire name is the class name and the status is the category's", () => {
    const cases: [ApiError, string, number][] = [
      [new ValidatorError('bad'), 'ValidatorError', 400],
      [new ExampleOperationError('bad'), 'ExampleOperationError', 400],
      [new ForbiddenError(), 'ForbiddenError', 403],
      [new ExampleNotFoundError('gone'), 'ExampleNotFoundError', 404],
      [new ExampleBusyError('busy'), 'ExampleBusyError', 409],
      [new ServiceUnavailableError('later'), 'ServiceUnavailableError', 503],
    ];
    for (const [err, wire, status] of cases) {
      expect(err.wireName).toBe(wire);
      expect(err.name).toBe(wire);
      expect(toHttp(err)).toEqual({
        status,
        body: { ok: false, result: { error: wire, error_msg: err.message } },
      });
    }
  });

  it('a subclass stays in its category for instanceof checks', () => {
    expect(new ExampleNotFoundError('x')).toBeInstanceOf(NotFoundError);
    expect(new ExampleBusyError('x')).toBeInstanceOf(ApiError);
  });

  it('extra fields ride beside error and error_msg', () => {
    expect(toHttp(new RateLimitError(7))).toEqual({
      status: 429,
      body: {
        ok: false,
        result: {
          error: 'RateLimitError',
          error_msg: 'Too many failed login attempts. Please try again in 7 seconds.',
          remaining_time: 7,
        },
      },
    });
  });

  it("Fastify's client errors keep their names and statuses", () => {
    const fst = (code: string) => Object.assign(new Error('m'), { code });
    expect(toHttp(fst('FST_ERR_CTP_BODY_TOO_LARGE')).status).toBe(413);
    expect(toHttp(fst('FST_ERR_CTP_BODY_TOO_LARGE')).body.result.error).toBe(
      'PayloadTooLargeError',
    );
    expect(toHttp(fst('FST_ERR_CTP_INVALID_MEDIA_TYPE')).body.result.error).toBe(
      'UnsupportedMediaTypeError',
    );
    expect(toHttp(fst('FST_ERR_BAD_URL')).body.result).toEqual({
      error: 'ValidatorError',
      error_msg: 'm',
    });
    const other = Object.assign(new Error('Not Acceptable'), { statusCode: 406 });
    expect(toHttp(other)).toEqual({
      status: 406,
      body: { ok: false, result: { error: 'ValidatorError', error_msg: 'Not Acceptable' } },
    });
    expect(toHttp(new Error('boom')).body.result).toEqual({
      error: 'InternalError',
      error_msg: 'Server got itself in trouble',
    });
  });
});

describe('default messages', () => {
  class ThingBusyError extends IsBusyError {
    static override readonly defaultMessage = 'The thing is busy';
  }
  class OtherThingBusyError extends ThingBusyError {}

  it('a class with a fixed text answers it when thrown without one, and passes it down', () => {
    expect(toHttp(new ThingBusyError()).body.result).toEqual({
      error: 'ThingBusyError',
      error_msg: 'The thing is busy',
    });
    expect(new OtherThingBusyError().message).toBe('The thing is busy');
    expect(new ThingBusyError('Said otherwise').message).toBe('Said otherwise');
    expect(new ForbiddenError().message).toBe('Forbidden');
  });
});
