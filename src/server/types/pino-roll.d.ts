declare module 'pino-roll' {
  import type { DestinationStream } from 'pino';

  interface PinoRollOptions {
    file: string | (() => string);
    frequency?: 'daily' | 'hourly' | number;
    size?: string | number;
    mkdir?: boolean;
    extension?: string;
    dateFormat?: string;
    limit?: { count?: number; removeOtherLogFiles?: boolean };
    symlink?: boolean;
    /** Passed to sonic-boom, which opens every rotated file with it. */
    mode?: number;
  }

  export default function pinoRoll(options: PinoRollOptions): Promise<DestinationStream>;
}
