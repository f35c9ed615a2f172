import { describe, expect, it } from 'vitest';
import { Random } from '../../../test/support/random.js';
import { MetricInputError } from './errors.js';
import { labelsFromRecord, labelsKey, quoteLabelValue } from './labels.js';
import { DEFAULT_TEXT_IMPORT_LIMITS, parseTextExposition } from './text-import.js';

const NOW = 1_700_000_000_000;

function parsed(text: string) {
  const result = parseTextExposition(text, NOW);
  return {
    ...result,
    samples: result.series.map((s) => [labelsKey(s.labels), Array.from(s.values), Array.from(s.timestamps)]),
  };
}

function refused(text: string, message: RegExp, status = 400, limits = DEFAULT_TEXT_IMPORT_LIMITS): void {
  let error: unknown;
  try {
    parseTextExposition(text, NOW, limits);
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(MetricInputError);
  expect((error as MetricInputError).message).toMatch(message);
  expect((error as MetricInputError).status).toBe(status);
}

describe('text exposition import', () => {
  it('reads samples, labels, timestamps and HELP/TYPE metadata', () => {
    const result = parsed(
      [
        '# HELP http_requests_total The total number of HTTP requests.',
        '# TYPE http_requests_total counter',
        'http_requests_total{method="post",code="200"} 1027 1395066363000',
        'http_requests_total{method="post",code="400"}    3 1395066363000',
        '',
        '# A normal comment.',
        'metric_without_timestamp_and_labels 12.47',
        '# HELP help_escapes Line one\\nline two \\\\ and \\"quotes\\" kept.',
        '# TYPE something_untyped untyped',
        'something_untyped{le="+Inf",} -0.0 -123',
        '\tindented{a="x"}\t5e-3',
        '# EOF',
      ].join('\n'),
    );
    expect(result.samples).toEqual([
      ['{__name__="http_requests_total", code="200", method="post"}', [1027], [1395066363000]],
      ['{__name__="http_requests_total", code="400", method="post"}', [3], [1395066363000]],
      ['{__name__="metric_without_timestamp_and_labels"}', [12.47], [NOW]],
      ['{__name__="something_untyped", le="+Inf"}', [-0], [-123]],
      ['{__name__="indented", a="x"}', [0.005], [NOW]],
    ]);
    expect(Object.is(result.series[3].values[0], -0)).toBe(true);
    expect(result.sampleCount).toBe(5);
    expect(result.metadata).toEqual([
      {
        metric: 'http_requests_total',
        type: 'counter',
        help: 'The total number of HTTP requests.',
        unit: '',
      },
      {
        metric: 'help_escapes',
        type: 'unknown',
        help: 'Line one\nline two \\ and \\"quotes\\" kept.',
        unit: '',
      },
      { metric: 'something_untyped', type: 'unknown', help: '', unit: '' },
    ]);
  });

  it('reads escapes, special values, CRLF, empty values and repeated series', () => {
    const result = parsed(
      'a{v="q\\"uote\\\\back\\nnl\\tkept"} NaN\r\nb +Inf\r\nb -inf 5\r\nc{x=""} 1\nd Infinity\nd nan 7\n',
    );
    expect(result.samples[0][0]).toBe(`{__name__="a", v=${quoteLabelValue('q"uote\\back\nnl\\tkept')}}`);
    expect(result.samples[0][1]).toEqual([NaN]);
    expect(result.samples[1]).toEqual(['{__name__="b"}', [Infinity, -Infinity], [NOW, 5]]);
    expect(result.samples[2]).toEqual(['{__name__="c"}', [1], [NOW]]);
    expect(result.samples[3]).toEqual(['{__name__="d"}', [Infinity, NaN], [NOW, 7]]);
    expect(parsed('').series).toEqual([]);
    expect(parsed('\n\n# only comments\n').series).toEqual([]);
  });

  it('refuses malformed lines, naming the line', () => {
    refused('ok 1\nbad', /^line 2: expected a value$/);
    refused('1metric 1', /^line 1: expected a metric name/);
    refused('m 0x10', /^line 1: invalid value "0x10"/);
    refused('m 1_000', /invalid value/);
    refused('m abc', /invalid value "abc"/);
    refused('m 1 1.5', /invalid timestamp "1.5"/);
    refused('m 1 99999999999999999999', /invalid timestamp/);
    refused('m 1 2 3', /unexpected "3" after the timestamp/);
    refused('m{a="1} 2', /label value is not terminated/);
    refused('m{1a="1"} 2', /expected a label name/);
    refused('m{a:b="1"} 2', /expected '=' after label "a"/);
    refused('m{a="1" b="2"} 2', /expected ',' or '}'/);
    refused('m{a="1",a="2"} 2', /^line 1: duplicate label name "a"/);
    refused('m{__name__="x"} 2', /duplicate label name "__name__"/);
    refused('m{a=1} 2', /expected a quoted label value/);
    refused('# TYPE m countr', /^line 1: invalid metric type "countr"/);
    refused('# HELP 1m help', /expected a metric name/);
  });

  it('enforces the line length and series limits (413) and label limits (400)', () => {
    const limits = { ...DEFAULT_TEXT_IMPORT_LIMITS, maxLineLength: 20, maxSeries: 2, maxValueLength: 3 };
    refused(`m{a="${'x'.repeat(30)}"} 1`, /^line 1: longer than 20 characters/, 413, limits);
    refused('a 1\nb 1\na 2\nc 1', /^line 4: more than 2 series/, 413, limits);
    refused('m{a="1234"} 1', /^line 1: the value of label "a" is longer than 3/, 400, limits);
  });

  it('reads back what it is given for random series (seeded)', () => {
    const rnd = new Random(9);
    for (let round = 0; round < 200; round++) {
      const want = new Map<string, { values: number[]; times: number[] }>();
      const lines: string[] = [];
      for (let i = rnd.int(0, 30); i > 0; i--) {
        const record: Record<string, string> = { __name__: rnd.pick(['a', 'b:c', '_d']) };
        for (let k = rnd.int(0, 3); k > 0; k--)
          record[rnd.pick(['x', 'y', 'le'])] = rnd.string('ab"\\\n{},= é', 1, 5);
        const labels = labelsFromRecord(record);
        const value = rnd.pick([rnd.normal() * 1e6, rnd.int(-5, 5), NaN, Infinity, -Infinity, 1e-300, 1e300]);
        const stamped = rnd.next() < 0.5;
        const t = stamped ? rnd.int(-1e12, 2e12) : NOW;
        const inner = labels
          .filter((l) => l.name !== '__name__')
          .map((l) => `${l.name}=${quoteLabelValue(l.value)}`)
          .join(',');
        lines.push(`${record.__name__}{${inner}} ${value}${stamped ? ` ${t}` : ''}`);
        const entry = want.get(labelsKey(labels)) ?? { values: [], times: [] };
        entry.values.push(value);
        entry.times.push(t);
        want.set(labelsKey(labels), entry);
      }
      const result = parsed(lines.join('\n'));
      expect(new Map(result.samples.map(([key, values, times]) => [key, { values, times }]))).toEqual(want);
    }
  });
});
