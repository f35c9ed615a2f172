/**
 * Text the service sent, made safe for a terminal: control characters (escape sequences, line
 * breaks inside a name) are shown as \u escapes instead of being interpreted.
 */
export function clean(text: string): string {
  return text.replace(/\p{Cc}/gu, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Columns padded to their widest cell, two spaces apart. */
export function table(headers: string[], rows: string[][]): string {
  const cells = [headers, ...rows.map((row) => row.map(clean))];
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  return cells
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export const printJson = (value: unknown): void => console.log(JSON.stringify(value, null, 2));
