/** EDID: generator, parser, presets (SPEC 3 "EDID"; wire-protocol.md §5.6, 5.13). */
export * from './timing';
export * from './edid';
export * from './presets';
