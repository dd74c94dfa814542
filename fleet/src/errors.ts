/**
 * The fleet's errors: the device server's family (server/src/errors.ts: the category carries the
 * status, the class name is the wire name, `toHttp` builds the kvmd envelope in one place) plus
 * the few refusals only the fleet makes.
 */
import type { CloudFieldError } from '@kvm/protocol';
import {
  ApiError,
  BadGatewayError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  ServiceUnavailableError,
  TooManyRequestsError,
  UnauthorizedError,
  ValidatorError,
} from '../../server/src/errors';

export {
  ApiError,
  BadRequestError,
  ForbiddenError,
  InternalError,
  NotFoundError,
  ServiceUnavailableError,
  UnauthorizedError,
  ValidatorError,
  errorBody,
  toHttp,
} from '../../server/src/errors';

/** SPEC 5's field messages, and the fleet's own two (the username or e-mail has an account). */
export type FleetFieldError = CloudFieldError | 'username_taken' | 'email_taken';

/** 400 with SPEC 5's field messages: `fields` maps a form field to its CloudFieldError key. */
export class CloudFormError extends ValidatorError {
  constructor(fields: Partial<Record<string, FleetFieldError>>, message = 'The form has errors') {
    super(message, { fields });
  }
}

/** 409: the username or e-mail belongs to an account already. */
export class AccountExistsError extends ConflictError {
  constructor(fields: Partial<Record<string, FleetFieldError>>) {
    super(
      fields.username ? 'This username is taken' : 'An account with this e-mail exists already',
      { fields },
    );
  }
}

/** 401: wrong username or password (one message for both, so names cannot be probed). */
export class InvalidCredentialsError extends UnauthorizedError {
  /** Why, for the event log only: a disabled account is answered as a wrong password. */
  readonly reason: 'password' | 'disabled';
  constructor(
    message = 'Invalid username or password',
    reason: 'password' | 'disabled' = 'password',
  ) {
    super(message);
    this.reason = reason;
  }
}

/** 401: the account has 2FA and the request had no code: ask for it (`totp_required`). */
export class TotpRequiredError extends UnauthorizedError {
  constructor() {
    super('This account asks for a 2FA code', { totp_required: true });
  }
}

/** 401: the 2FA code is wrong or was used already. */
export class InvalidTotpError extends UnauthorizedError {
  constructor(message = 'Invalid or reused 2FA code') {
    super(message);
  }
}

/** 401: no fleet session (or it ended). */
export class NotSignedInError extends UnauthorizedError {
  constructor(message = 'Not signed in') {
    super(message);
  }
}

/** 403: an admin's call (users, groups, files, rollouts, alerts) made by a user. */
export class AdminRequiredError extends ForbiddenError {
  constructor(message = 'Only a fleet admin may do this') {
    super(message);
  }
}

/** 401: a device's `Authorization: Device id:secret` that is not a binding. */
export class DeviceAuthError extends UnauthorizedError {
  constructor(message = 'Unknown device or wrong secret') {
    super(message);
  }
}

/** 403: a state-changing request from another site (Origin differs from the Host). */
export class CrossOriginError extends ApiError {
  override readonly status: number = 403;
  static override readonly defaultMessage: string = 'Cross-site requests are refused';
}

/** 404: no such bind code (wrong, expired or used): counted by the claim rate limit. */
export class BindCodeNotFoundError extends NotFoundError {
  constructor(message = 'No such bind code, or it expired') {
    super(message);
  }
}

/** 410: the bind code expired, or its binding was collected already. */
export class BindCodeGoneError extends ApiError {
  override readonly status: number = 410;
  static override readonly defaultMessage: string = 'This bind code expired or was used';
}

/** 429: too many of these requests from this client; `remaining_time` in seconds. */
export class FleetRateLimitError extends TooManyRequestsError {
  constructor(what: string, remainingSeconds: number) {
    super(`${what}. Please try again in ${remainingSeconds} seconds.`, {
      remaining_time: remainingSeconds,
    });
  }
}

/** 409: the account is not in the state this needs (2FA on already, setup not started...). */
export class ConflictStateError extends ConflictError {}

/** 502: the mail server refused or did not answer. */
export class MailFailedError extends BadGatewayError {}

/** 503: PostgreSQL cannot be reached now (restarting, down); try again shortly. */
export class DatabaseUnavailableError extends ServiceUnavailableError {
  constructor() {
    super("The fleet's database is unavailable; try again shortly", { remaining_time: 2 });
  }
}
