/**
 * A fake command runner for the nmcli and timedatectl tests: answers from the recorded fixtures
 * (fixtures/README.md) and records the argv of every call.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CommandError, type CommandRunner } from '../../process/run';

export function fixture(name: string): string {
  return readFileSync(join(import.meta.dirname, 'fixtures', name), 'utf8');
}

/** What a route answers: stdout, or a failure with nmcli's stderr and exit status. */
export type Reply = string | { fail: string; code?: number | string };

export function fail(stderr: string, code: number | string = 4): Reply {
  return { fail: stderr, code };
}

export interface FakeRunner {
  run: CommandRunner;
  /** argv of every call, command first. */
  calls: string[][];
  /** Calls as single strings (`nmcli radio wifi on`), for readable assertions. */
  lines(): string[];
}

/** `answer(argv)` returns the reply, or undefined for "no such fixture" (the test fails). */
export function fakeRunner(answer: (argv: string[]) => Reply | undefined): FakeRunner {
  const calls: string[][] = [];
  const run: CommandRunner = async (file, args) => {
    const argv = [file, ...args];
    calls.push(argv);
    const reply = answer(argv);
    if (reply === undefined) throw new Error(`unexpected command: ${argv.join(' ')}`);
    if (typeof reply === 'string') return { stdout: reply, stderr: '' };
    throw new CommandError(file, args, { code: reply.code ?? 4, stderr: reply.fail });
  };
  return { run, calls, lines: () => calls.map((c) => c.join(' ')) };
}
