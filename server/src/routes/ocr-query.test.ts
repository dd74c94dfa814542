/** kvmd's `ocr_*` snapshot arguments, parsed on the route side (moved from ocr-service.test.ts). */
import { describe, expect, it } from 'vitest';
import { ValidatorError } from '../errors';
import type { OcrRequest } from '../services/ocr/ocr-service';
import { parseOcrQuery } from './ocr';

const WHOLE: OcrRequest = { langs: [], left: -1, top: -1, right: -1, bottom: -1 };

describe('parseOcrQuery (kvmd snapshot arguments)', () => {
  it('defaults: no languages, every edge -1', () => {
    expect(parseOcrQuery({ ocr: '1' })).toEqual(WHOLE);
  });

  it('splits ocr_langs on commas, tabs and spaces and lower-cases them', () => {
    const req = parseOcrQuery({ ocr_langs: ' ENG, deu\tchi_sim  ', ocr_left: '10' });
    expect(req.langs).toEqual(['eng', 'deu', 'chi_sim']);
    expect(req).toMatchObject({ left: 10, top: -1, right: -1, bottom: -1 });
  });

  it('takes decimal and 0x integers for the edges', () => {
    const req = parseOcrQuery({ ocr_left: '0x10', ocr_top: '3', ocr_right: '-1', ocr_bottom: '' });
    expect(req).toMatchObject({ left: 16, top: 3, right: -1, bottom: -1 });
  });

  it.each([
    [{ ocr_left: 'abc' }, 'ocr_left'],
    [{ ocr_bottom: '1.5' }, 'ocr_bottom'],
    [{ ocr_top: '99999999999' }, 'ocr_top'],
    [{ ocr_langs: ['eng', 'deu'] }, 'ocr_langs'],
    [{ ocr_langs: 'x'.repeat(300) }, 'ocr_langs'],
    [{ ocr_langs: 'a b c d e f g h i' }, 'ocr_langs'],
  ])('refuses %j naming the argument', (query, name) => {
    expect(() => parseOcrQuery(query)).toThrow(ValidatorError);
    expect(() => parseOcrQuery(query)).toThrow(name);
  });

  it('refuses a language name that is a path or an option, as kvmd words it', () => {
    expect(() => parseOcrQuery({ ocr_langs: 'eng,../../etc/x' })).toThrow(
      "Failed sub-validator on one of the item of ['eng', '../../etc/x']",
    );
    expect(() => parseOcrQuery({ ocr_langs: '--psm' })).toThrow(ValidatorError);
  });
});
