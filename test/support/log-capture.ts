import { Writable } from 'node:stream';

export interface LogRecord {
  time: string;
  level: string;
  msg: string;
  component?: string;
  request_id?: string;
  [key: string]: unknown;
}

/** A stream the app writes its JSON log lines to instead of stdout. */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  private partial = '';

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    const text = this.partial + chunk.toString('utf8');
    const parts = text.split('\n');
    this.partial = parts.pop() ?? '';
    this.lines.push(...parts.filter((line) => line.length > 0));
    callback();
  }

  records(): LogRecord[] {
    return this.lines.map((line) => JSON.parse(line) as LogRecord);
  }

  text(): string {
    return this.lines.join('\n');
  }
}
