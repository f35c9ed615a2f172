// `.../auth/keys`: the token signing keys (operator only).
import type { Timestamp } from './common.js';

export interface KeyView {
  kid: string;
  alg: string;
  status: 'signing' | 'published';
  created_at: Timestamp;
  /** A retired key stays published until the tokens it signed have expired. */
  publish_until: Timestamp | null;
}

export interface KeyList {
  keys: KeyView[];
}

export interface KeyRotation {
  /** The new signing key. */
  kid: string;
  /** The keys this rotation retired. */
  retired: string[];
}
