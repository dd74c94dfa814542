import { describe, expect, it } from 'vitest';
import { queryOf, str } from './validators';

describe('queryOf', () => {
  it("hands a route its request's query arguments as they were parsed", () => {
    const query = { mac: '52:54:00:12:34:56', name: ['a', 'b'] };
    expect(queryOf({ query })).toBe(query);
    expect(str('mac', queryOf({ query })['mac'])).toBe('52:54:00:12:34:56');
  });

  it('a request without a query string has no arguments (not a TypeError)', () => {
    expect(queryOf({ query: undefined })).toEqual({});
    expect(queryOf({ query: null })['region']).toBeUndefined();
  });
});
