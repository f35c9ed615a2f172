/**
 * Prometheus 2.42's own evaluation without a server: `promtool test rules` (the Debian package)
 * on input series and expressions, one expression per evaluation second. Each case says what it
 * expects; the answer is promtool's report per case that did not get it (`err: ...` for an
 * expression Prometheus refuses, else what it got instead), by case index.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

export interface RuleCase {
  expr: string;
  /** Expected series as PromQL label sets (`m{v="a"}`), each with the value 1. */
  series: string[];
}

const run = promisify(execFile);

/** A failure's evaluation time (Prometheus writes `1m` for 60 s): the case's index. */
function caseIndex(block: string): number | undefined {
  const t = /time: (?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?[,\s]/.exec(block);
  return t ? Number(t[1] ?? 0) * 3600 + Number(t[2] ?? 0) * 60 + Number(t[3] ?? 0) : undefined;
}

export async function promtoolFailures(
  inputSeries: string[],
  cases: RuleCase[],
): Promise<Map<number, string>> {
  const file = {
    rule_files: [],
    evaluation_interval: '1s',
    tests: [
      {
        interval: '1s',
        input_series: inputSeries.map((series) => ({ series, values: `1+0x${cases.length}` })),
        promql_expr_test: cases.map((c, i) => ({
          expr: c.expr,
          eval_time: `${i}s`,
          exp_samples: c.series.map((labels) => ({ labels, value: 1 })),
        })),
      },
    ],
  };
  const dir = mkdtempSync(join(tmpdir(), 'promtool-'));
  try {
    writeFileSync(join(dir, 'tests.yml'), JSON.stringify(file));
    const out = await run('promtool', ['test', 'rules', join(dir, 'tests.yml')], { maxBuffer: 1 << 26 }).then(
      (r) => r.stdout + r.stderr,
      (err: { stdout: string; stderr: string }) => err.stdout + err.stderr,
    );
    if (!/SUCCESS|FAILED/.test(out)) throw new Error(`promtool did not run the tests:\n${out}`);
    const failures = new Map<number, string>();
    for (const block of out.split(/(?=\n\s+expr: )/)) {
      const i = caseIndex(block);
      if (i !== undefined) failures.set(i, block.trim());
    }
    return failures;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A label set in PromQL syntax; empty values left out, as Prometheus drops them. */
export function seriesText(labels: Record<string, string>): string {
  const parts = Object.entries(labels)
    .filter(([, v]) => v !== '')
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  return `m{${parts.join(', ')}}`;
}
