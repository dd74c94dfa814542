/**
 * zod as the server and the protocol's schemas use it: zod/mini, its functional build (a schema
 * is a plain object and each check a function, so a bundle takes only what it uses), with zod's
 * English messages, which zod/mini does not set by itself. `import * as z from` this module.
 *
 * Not zod's classic API (`import { z } from 'zod'`): its schemas carry every method, and with
 * them most of the library: 250 KB more of the server's bundle and 1.5 MB more idle memory
 * (docs/operations.md "Memory"); the server's build refuses it. This module is named in
 * package.json's `sideEffects`, so a bundle keeps the `config` call below.
 */
import { config } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

config(en());

export * from 'zod/mini';
