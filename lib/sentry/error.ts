// The one error kind the Sentry protocol layer throws.
import { HttpError } from '../http.ts';

/**
 * A request the Sentry protocol layer refuses. It is an HttpError, so toErrorResponse (lib/http.ts)
 * answers it as `{ error, code }` with its status like every other client error; the subclass only
 * lets callers and tests tell it apart.
 */
export class SentryProtocolError extends HttpError {
  constructor(status: number, code: string, message: string) {
    super(status, code, message);
    this.name = 'SentryProtocolError';
  }
}
