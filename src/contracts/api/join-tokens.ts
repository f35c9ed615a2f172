// `.../orchestrator/join-tokens`: what agents enroll with.
import type { Labels, Timestamp } from './common.js';
import type { ListPage } from './page.js';

export interface JoinTokenView {
  id: string;
  pre_approved: boolean;
  labels: Labels;
  created_at: Timestamp;
  expires_at: Timestamp;
  revoked_at: Timestamp | null;
  expired: boolean;
  uses: number;
}

export interface CreatedJoinToken {
  /** Shown once; only its digest is stored. */
  token: string;
  id: string;
  expires_at: Timestamp;
  pre_approved: boolean;
  labels: Labels;
}

export interface CreateJoinTokenRequest {
  /** Lifetime as duration text (`1h`, `7d`); JOIN_TOKEN_TTL when absent. */
  ttl?: string;
  pre_approved?: boolean;
  labels?: Labels;
}

export type JoinTokenList = ListPage<'join_tokens', JoinTokenView>;
