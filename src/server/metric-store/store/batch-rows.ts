import { ByteReader, ByteWriter } from '../bytes.js';
import { decodeChunk, encodeChunk } from '../chunk.js';

/** One series' samples in a write, by series id, timestamps ascending and unique. */
export interface BatchGroup {
  seriesId: number;
  timestamps: Float64Array;
  values: Float64Array;
}

/**
 * A batch row's bytes: the number of groups, then per group its series id and its samples as one
 * length-prefixed chunk (unsigned varints, bytes.ts).
 */
export function encodeBatch(groups: readonly BatchGroup[]): Uint8Array {
  const chunks = groups.map((g) => encodeChunk(g.timestamps, g.values));
  const out = new ByteWriter(16 + chunks.reduce((n, c) => n + c.length + 12, 0));
  out.uvarint(groups.length);
  groups.forEach((g, i) => {
    out.uvarint(g.seriesId);
    out.blob(chunks[i]);
  });
  return out.finish();
}

export function decodeBatch(bytes: Uint8Array): BatchGroup[] {
  const reader = new ByteReader(bytes);
  const count = reader.uvarint();
  const groups: BatchGroup[] = [];
  for (let i = 0; i < count; i++) {
    const seriesId = reader.uvarint();
    const chunk = decodeChunk(reader.blob());
    groups.push({ seriesId, timestamps: chunk.timestamps, values: chunk.values });
  }
  return groups;
}
