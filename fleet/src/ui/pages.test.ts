/** The fleet's pages: served with a strict CSP, labelled controls, a script that parses. */
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { PAGE_HTML } from './page';
import { registerPages } from './routes';
import { PAGE_JS, bindCodeOf, safeNext } from './script';

describe('pages', () => {
  it('serves the page, its script and style with a CSP that allows only this origin', async () => {
    const app = Fastify();
    registerPages(app);
    const r = await app.inject({ method: 'GET', url: '/' });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/html/);
    expect(r.headers['content-security-policy']).toContain("script-src 'self'");
    expect(r.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(r.headers['x-frame-options']).toBe('DENY');
    for (const id of ['signin-username', 'signup-send-code', 'claim-code', 'device-table']) {
      expect(r.body).toContain(`data-testid="${id}"`);
    }
    expect(
      (await app.inject({ method: 'GET', url: '/ui/app.js' })).headers['content-type'],
    ).toMatch(/^text\/javascript/);
    expect((await app.inject({ method: 'GET', url: '/ui/style.css' })).statusCode).toBe(200);
  });

  it('every input has a label; the script parses and writes no HTML', () => {
    const inputs = [...PAGE_HTML.matchAll(/<(input|select)[^>]*\sid="([^"]+)"/g)].map((m) => m[2]);
    expect(inputs.length).toBeGreaterThan(8);
    for (const id of inputs) {
      const labelled =
        PAGE_HTML.includes(`for="${id}"`) ||
        new RegExp(`<label[^>]*>\\s*<input[^>]*\\sid="${id}"`).test(PAGE_HTML);
      expect(labelled, id).toBe(true);
    }
    expect(() => new Function(PAGE_JS)).not.toThrow();
    expect(PAGE_JS).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });

  it('after signing in, ?next= leads back to a console of this fleet and nowhere else', () => {
    expect(safeNext('?next=%2Fd%2Fdev1%2F')).toBe('/d/dev1/');
    expect(safeNext('?next=/d/dev1/settings?x=1')).toBe('/d/dev1/settings?x=1');
    for (const bad of [
      '',
      '?next=https://evil.example/d/x/',
      '?next=//evil.example/d/x/',
      '?next=/d//evil.example/',
      '?next=/d/dev1/..//evil',
      '?next=/cloud-basic/v1/logout',
      '?next=/d/dev1\\evil',
      '?next=javascript:alert(1)',
    ]) {
      expect(safeNext(bad), bad).toBeNull();
    }
    // the page runs the same function
    expect(PAGE_JS).toContain(safeNext.toString());
  });

  it("a device's bind link fills in its code (8 digits only)", () => {
    expect(bindCodeOf('?code=12345678')).toBe('12345678');
    for (const bad of ['', '?code=1234567', '?code=123456789', '?code=12345678x', '?x=12345678']) {
      expect(bindCodeOf(bad), bad).toBeNull();
    }
    expect(PAGE_JS).toContain(bindCodeOf.toString());
  });
});
