/**
 * Imported first by main.ts, before any other module runs. V8 grows the young generation
 * while startup's objects survive its collections and then keeps that size: 5 MB of an idle
 * server's resident memory that holds only garbage between scavenges. At its first size the
 * scavenges come more often and stay short (they copy only what lives), which suits a
 * server whose steady work is small messages and frames held outside the heap.
 * Set at run time (not a node flag) so every way of starting the server gets it.
 */
import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--semi-space-growth-factor=1');
