import { describe, expect, it } from 'vitest';
import { bindCodeOf, routeOfHash, safeNext } from './links';

describe('links', () => {
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
  });

  it("a device's bind link fills in its code (8 digits only)", () => {
    expect(bindCodeOf('?code=12345678')).toBe('12345678');
    for (const bad of ['', '?code=1234567', '?code=123456789', '?code=12345678x', '?x=12345678']) {
      expect(bindCodeOf(bad), bad).toBeNull();
    }
  });

  it("part 1's hash addresses become routes", () => {
    expect(routeOfHash('#devices')).toBe('/devices');
    expect(routeOfHash('#signup')).toBe('/signup');
    expect(routeOfHash('#signin')).toBe('/signin');
    expect(routeOfHash('#other')).toBeNull();
    expect(routeOfHash('')).toBeNull();
  });
});
