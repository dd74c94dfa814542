/**
 * Request bodies of routes that take none (issue 13, item 1). kvmd reads only the query on its
 * command routes and never looks at the body or its type, and aiohttp's `post(url, params=…)`
 * sends `Content-Type: application/octet-stream` with `Content-Length: 0` (some versions omit
 * the length). Fastify would answer 415 for a type it has no parser for, and 400 for an empty
 * JSON body. The rule here is global, so a new route needs nothing:
 *
 * - any type without a parser of its own (octet-stream, none, anything): the body is read
 *   within the route's body limit and dropped; the route sees `undefined`;
 * - `application/json` with an empty (or blank) body: `undefined`, as if none came; a real
 *   JSON body is parsed as before (prototype poisoning refused);
 * - forms and multipart keep their parsers (forms.ts, @fastify/multipart), and the routes
 *   that read a raw body of any type (hid/print, upgrade/log, msd/write) keep their scopes'
 *   own catch-all parsers.
 *
 * A route that needs a body validates what it got, so a body of the wrong type now gets that
 * route's 400 naming the argument instead of a bare 415.
 */
import type { FastifyInstance } from 'fastify';

export function registerBodyParsers(app: FastifyInstance): void {
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if ((body as string).trim() === '') {
      done(null, undefined);
      return;
    }
    json(request, body as string, done);
  });
  // parseAs makes Fastify enforce the route's bodyLimit (413) and a short body (400).
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, _body, done) => {
    done(null, undefined);
  });
}
