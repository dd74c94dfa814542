import { describe, expect, it } from 'vitest';
import { CommandError, runCommand, runCommandBuffer } from './run';

async function failure(p: Promise<unknown>): Promise<CommandError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CommandError);
  return err as CommandError;
}

describe('runCommand', () => {
  it('resolves with what the command wrote, a value being one argv entry', async () => {
    const r = await runCommand('sh', ['-c', 'printf "%s|" "$1"; echo oops >&2', 'sh', 'a b; $(x)']);
    expect(r).toEqual({ stdout: 'a b; $(x)|', stderr: 'oops\n' });
  });

  it('rejects a non-zero exit with the status and what the command said', async () => {
    const err = await failure(
      runCommand('sh', ['-c', 'echo out; echo "  bad thing  " >&2; exit 3']),
    );
    expect(err.code).toBe(3);
    expect(err.signal).toBeNull();
    expect(err.timedOut).toBe(false);
    expect(err.stdout).toBe('out\n');
    expect(err.stderr).toBe('  bad thing  \n');
    expect(err.reason).toBe('bad thing');
    expect(err.message).toBe('sh -c echo out; echo "  bad thing  " >&2; exit 3: bad thing');
    expect(err.argv).toEqual(['sh', '-c', 'echo out; echo "  bad thing  " >&2; exit 3']);
  });

  it('says the exit status when the command said nothing', async () => {
    const err = await failure(runCommand('false', []));
    expect(err.code).toBe(1);
    expect(err.message).toBe('false: exit 1');
  });

  it('says why a missing command did not start', async () => {
    const err = await failure(runCommand('kvm-no-such-command', ['x']));
    expect(err.code).toBe('ENOENT');
    expect(err.timedOut).toBe(false);
    expect(err.message).toBe('kvm-no-such-command x: spawn kvm-no-such-command ENOENT');
  });

  it('kills a command that overruns its timeout (SIGKILL unless told)', async () => {
    const t0 = performance.now();
    const err = await failure(runCommand('sleep', ['30'], { timeoutMs: 200 }));
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(err.timedOut).toBe(true);
    expect(err.signal).toBe('SIGKILL');
    expect(err.message).toBe('sleep 30: timed out after 200 ms');
    const term = await failure(
      runCommand('sleep', ['30'], { timeoutMs: 200, killSignal: 'SIGTERM' }),
    );
    expect(term.signal).toBe('SIGTERM');
    expect(term.timedOut).toBe(true);
  });

  it('cuts a command off past maxBuffer: not a timeout', async () => {
    const err = await failure(
      runCommand('head', ['-c', '100000', '/dev/zero'], { maxBuffer: 1000 }),
    );
    expect(err.code).toBe('ERR_CHILD_PROCESS_STDIO_MAXBUFFER');
    expect(err.timedOut).toBe(false);
    expect(err.stdout.length).toBeLessThanOrEqual(1000);
  });

  it('feeds input to stdin, and closes stdin when there is none', async () => {
    expect((await runCommand('cat', [], { input: 'hello' })).stdout).toBe('hello');
    // without input a reader sees end of file at once instead of waiting for its timeout
    expect((await runCommand('cat', [], { timeoutMs: 5000 })).stdout).toBe('');
  });

  it('runs with the environment it is given', async () => {
    const r = await runCommand('sh', ['-c', 'echo "$KVM_RUN_TEST"'], {
      env: { PATH: process.env['PATH'], KVM_RUN_TEST: 'yes' },
    });
    expect(r.stdout).toBe('yes\n');
  });
});

describe('runCommand: output as it comes, and abort', () => {
  it('hands stdout to onStdout before the command ends, and kills it on abort', async () => {
    const abort = new AbortController();
    const seen: string[] = [];
    const run = runCommand('sh', ['-c', 'echo "visit https://example.test/x"; sleep 30'], {
      timeoutMs: 20_000,
      signal: abort.signal,
      onStdout: (chunk) => {
        seen.push(chunk);
        abort.abort();
      },
    });
    const err = await failure(run);
    expect(seen.join('')).toContain('https://example.test/x');
    expect(err.stdout).toContain('https://example.test/x');
  });
});

describe('runCommandBuffer', () => {
  it('resolves stdout as bytes', async () => {
    const r = await runCommandBuffer('cat', [], { input: new Uint8Array([0, 255, 10]) });
    expect(Buffer.isBuffer(r.stdout)).toBe(true);
    expect([...r.stdout]).toEqual([0, 255, 10]);
  });
});
