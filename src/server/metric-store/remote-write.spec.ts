import snappy from 'snappyjs';
import { describe, expect, it } from 'vitest';
import { bitDifference, floatsFromBits, Random } from '../../../test/support/random.js';
import { ByteWriter } from './bytes.js';
import { MetricInputError } from './errors.js';
import { canonicalLabels } from './labels.js';
import type { MetricMetadata } from './metadata.js';
import { decodeRemoteWrite, DEFAULT_REMOTE_WRITE_LIMITS } from './remote-write.js';
import {
  encodeWriteRequest,
  encodeWriteRequestProto,
  type WriteRequestSeries,
} from './remote-write-encode.js';
import { isStaleMarker, staleMarker, STALE_NAN_BITS } from './series.js';

const l = (name: string, value: string) => ({ name, value });
const up = (value = 1, t = 1000): WriteRequestSeries => ({
  labels: [l('__name__', 'up'), l('job', 'x')],
  timestamps: [t],
  values: [value],
});

function refused(
  body: Uint8Array,
  message: RegExp,
  status = 400,
  limits = DEFAULT_REMOTE_WRITE_LIMITS,
): void {
  let error: unknown;
  try {
    decodeRemoteWrite(body, limits);
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(MetricInputError);
  expect((error as MetricInputError).message).toMatch(message);
  expect((error as MetricInputError).status).toBe(status);
}

/** A request with hand-written protobuf, for what the encoder would not produce. */
function raw(fill: (w: ByteWriter) => void): Uint8Array {
  const w = new ByteWriter();
  fill(w);
  return snappy.compress(w.finish());
}

describe('remote write decoding', () => {
  it('round-trips random requests: canonical labels, times, value bits (seeded)', () => {
    const rnd = new Random(1);
    for (let round = 0; round < 200; round++) {
      const series: WriteRequestSeries[] = Array.from({ length: rnd.int(0, 20) }, () => {
        const n = rnd.int(0, 10);
        const values = new Float64Array(n);
        for (let i = 0; i < n; i++) rnd.bitsFloat(values, i);
        const labels = [
          l('__name__', rnd.pick(['up', 'a:b', 'x_total'])),
          l('v', rnd.string('aé日"\\\n', 0, 5)),
        ];
        if (rnd.next() < 0.5) labels.reverse();
        const t0 = rnd.pick([0, 1.7e12, -1e12, 2 ** 52 - 100]);
        return { labels, timestamps: Array.from({ length: n }, (_, i) => t0 + i * rnd.int(1, 9)), values };
      });
      const decoded = decodeRemoteWrite(encodeWriteRequest(series));
      const kept = series.filter((s) => s.timestamps.length > 0);
      expect(decoded.series.length).toBe(kept.length);
      expect(decoded.sampleCount).toBe(kept.reduce((n, s) => n + s.timestamps.length, 0));
      decoded.series.forEach((s, i) => {
        expect(s.labels).toEqual(canonicalLabels(kept[i].labels));
        expect(Array.from(s.timestamps)).toEqual(kept[i].timestamps);
        expect(bitDifference(s.values, kept[i].values as Float64Array)).toBeUndefined();
      });
    }
  });

  it('keeps the stale marker bits and metadata, and skips exemplars, histograms and unknown fields', () => {
    const marker = floatsFromBits([STALE_NAN_BITS]);
    const metadata: MetricMetadata[] = [
      { metric: 'http_requests', type: 'counter', help: 'Requests.', unit: '' },
    ];
    const decoded = decodeRemoteWrite(encodeWriteRequest([{ ...up(), values: marker }], metadata));
    expect(isStaleMarker(decoded.series[0].values[0])).toBe(true);
    expect(bitDifference(decoded.series[0].values, marker)).toBeUndefined();
    expect(decoded.metadata).toEqual(metadata);

    // A stale marker held as a JS number (quiet bit set) goes on the wire as Prometheus's exact bits.
    const wire = encodeWriteRequestProto([{ ...up(), values: [staleMarker()] }]);
    const bits = Buffer.from(wire).toString('hex');
    expect(bits).toContain(Buffer.from(floatsFromBits([STALE_NAN_BITS]).buffer).toString('hex'));

    const proto = encodeWriteRequestProto([up(5)]);
    const extra = raw((w) => {
      w.raw(proto.subarray(0, 1)); // the time series tag; the rest rewritten with extra fields
      const inner = new ByteWriter();
      inner.raw(proto.subarray(2));
      inner.raw(Uint8Array.of((3 << 3) | 2, 2, 0x08, 0x01)); // an exemplar
      inner.raw(Uint8Array.of((4 << 3) | 2, 0)); // a native histogram
      inner.raw(Uint8Array.of((9 << 3) | 5, 1, 2, 3, 4, (10 << 3) | 1, 1, 2, 3, 4, 5, 6, 7, 8)); // unknown
      w.blob(inner.finish());
      w.raw(Uint8Array.of((2 << 3) | 0, 7)); // reserved field 2 of WriteRequest
    });
    const skipped = decodeRemoteWrite(extra);
    expect(skipped.series.map((s) => Array.from(s.values))).toEqual([[5]]);
    expect(skipped.skipped).toEqual({ exemplars: 1, histograms: 1 });
  });

  it('refuses bodies that are not snappy, or larger than the limit before inflating them', () => {
    refused(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff), /no length preamble/);
    refused(Uint8Array.of(), /no length preamble/);
    // Declares 1 GiB in six bytes: refused by its preamble alone.
    refused(
      Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x04, 0),
      /1073741824 bytes is over the limit of 67108864/,
      413,
    );
    const body = encodeWriteRequest([up()]);
    refused(body.subarray(0, body.length - 1), /not valid snappy/);
    refused(Uint8Array.from([...body, 0]), /not valid snappy/);
    const longer = body.slice();
    longer[0] += 1; // declares one byte more than the tags produce
    refused(longer, /not valid snappy/);
    refused(body, /over the limit/, 413, { ...DEFAULT_REMOTE_WRITE_LIMITS, maxBytes: 10 });
  });

  it('refuses malformed protobuf, saying what is wrong', () => {
    const proto = encodeWriteRequestProto([up()]);
    refused(snappy.compress(proto.subarray(0, proto.length - 3)), /protobuf: .*(past|range)/);
    refused(
      raw((w) => w.raw(Uint8Array.of((1 << 3) | 0, 1))),
      /timeseries has wire type varint, expected length-delimited/,
    );
    refused(
      raw((w) => w.raw(Uint8Array.of(0, 1))),
      /field number 0/,
    );
    refused(
      raw((w) => w.raw(Uint8Array.of((1 << 3) | 2, 4, (2 << 3) | 2, 2, (1 << 3) | 5, 0))),
      /sample value has wire type 32-bit/,
    );
    refused(
      raw((w) => w.raw(Uint8Array.of((1 << 3) | 2, 5, (2 << 3) | 2, 3, (2 << 3) | 2, 1, 0))),
      /sample timestamp has wire type/,
    );
    refused(
      raw((w) => w.raw(Uint8Array.of((7 << 3) | 7))),
      /protobuf: invalid wire type 7/,
    );
    refused(
      raw((w) => w.raw(Uint8Array.of((1 << 3) | 2, 0x80))),
      /protobuf/,
    );
  });

  it('refuses invalid series: no name, bad names, duplicates, bad UTF-8, times out of range', () => {
    const series = (labels: { name: string; value: string }[], t = 1000) =>
      encodeWriteRequest([{ labels, timestamps: [t], values: [1] }]);
    refused(series([]), /no metric name/);
    refused(series([l('job', 'x')]), /no metric name/);
    refused(series([l('__name__', 'a-b')]), /invalid metric name "a-b"/);
    refused(series([l('__name__', 'up'), l('1x', 'y')]), /invalid label name "1x"/);
    refused(series([l('__name__', 'up'), l('a', '1'), l('a', '2')]), /duplicate label name "a"/);
    refused(series([l('__name__', 'up')], 2 ** 60), /timestamp out of range/);
    refused(series([l('__name__', 'up')], -(2 ** 60)), /timestamp out of range/);
    const badUtf8 = raw((w) => {
      const label = Uint8Array.of((1 << 3) | 2, 1, 0x61, (2 << 3) | 2, 2, 0xc3, 0x28);
      w.raw(Uint8Array.of((1 << 3) | 2, label.length + 2, (1 << 3) | 2, label.length, ...label));
    });
    refused(badUtf8, /the value of label "a" is not valid UTF-8/);
  });

  it('enforces the series and label limits', () => {
    const limits = {
      ...DEFAULT_REMOTE_WRITE_LIMITS,
      maxSeries: 2,
      maxLabelsPerSeries: 2,
      maxLabelValueLength: 4,
    };
    refused(encodeWriteRequest([up(), up(), up()]), /more than 2 series/, 413, limits);
    refused(
      encodeWriteRequest([{ ...up(), labels: [l('__name__', 'up'), l('a', '1'), l('b', '2')] }]),
      /3 labels/,
      400,
      limits,
    );
    refused(
      encodeWriteRequest([{ ...up(), labels: [l('__name__', 'up'), l('a', '12345')] }]),
      /longer than 4/,
      400,
      limits,
    );
    expect(decodeRemoteWrite(encodeWriteRequest([up(), up()]), limits).series).toHaveLength(2);
  });

  it('answers a MetricInputError and nothing else for any corruption of a valid body (seeded)', () => {
    const rnd = new Random(77);
    const proto = encodeWriteRequestProto([up(1), { ...up(2), labels: [l('__name__', 'b'), l('i', 'h:1')] }]);
    for (let round = 0; round < 3000; round++) {
      const junk = proto.slice();
      for (let k = rnd.int(1, 3); k > 0; k--) junk[rnd.int(0, junk.length - 1)] = rnd.int(0, 255);
      try {
        decodeRemoteWrite(snappy.compress(junk));
      } catch (err) {
        expect(err).toBeInstanceOf(MetricInputError);
      }
    }
  });
});
