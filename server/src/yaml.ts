/**
 * The YAML parser, for a config file (config.ts): a bundle of its own in the build (yaml.js,
 * scripts/build.mjs LAZY_ENTRIES), so a server started without a config file never loads it.
 */
export { parse } from 'yaml';
