/** The WoL route's argument checks (the service takes what they return). */
import { describe, expect, it } from 'vitest';
import { ValidatorError } from '../errors';
import { wolMac, wolName } from './wol';

describe('WoL arguments, parsed on the route side', () => {
  it('normalizes a MAC and refuses anything else, naming the argument', () => {
    expect(wolMac(' aa:bb:cc:dd:ee:0f ')).toBe('AA:BB:CC:DD:EE:0F');
    for (const bad of ['', 'aa-bb-cc-dd-ee-ff', 'aa:bb:cc:dd:ee', 'gg:bb:cc:dd:ee:ff']) {
      expect(() => wolMac(bad)).toThrow(ValidatorError);
      expect(() => wolMac(bad)).toThrow("The argument 'mac'");
    }
  });

  it('trims a name and refuses an empty, long or control-character one', () => {
    expect(wolName('  Office PC ')).toBe('Office PC');
    expect(() => wolName('   ')).toThrow("The argument 'name' must be 1 to");
    expect(() => wolName('x'.repeat(1000))).toThrow("The argument 'name' must be 1 to");
    expect(() => wolName('a\nb')).toThrow('must not contain control characters');
    expect(() => wolName('a\u202eb')).toThrow('direction overrides');
  });
});
