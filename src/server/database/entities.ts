import { CertificateAuthorityEntity } from '../agent-gateway/entities/certificate-authority.entity.js';
import { WorkerCertificateEntity } from '../agent-gateway/entities/worker-certificate.entity.js';
import { AuditEventEntity } from '../audit/entities/audit-event.entity.js';
import { ClientEntity } from '../auth/entities/client.entity.js';
import { RefreshTokenEntity } from '../auth/entities/refresh-token.entity.js';
import { SigningKeyEntity } from '../auth/entities/signing-key.entity.js';
import { DriftItemEntity } from '../drift/entities/drift-item.entity.js';
import { JobEntity } from '../jobs/entities/job.entity.js';
import { StackRevisionEntity } from '../stacks/entities/stack-revision.entity.js';
import { StackEntity } from '../stacks/entities/stack.entity.js';
import { SettingEntity } from '../settings/entities/setting.entity.js';
import { JoinTokenEntity } from '../workers/entities/join-token.entity.js';
import { WorkerEntity } from '../workers/entities/worker.entity.js';

/** Every entity of the service; features add theirs here. */
export const ENTITIES = [
  SettingEntity,
  ClientEntity,
  RefreshTokenEntity,
  SigningKeyEntity,
  AuditEventEntity,
  CertificateAuthorityEntity,
  WorkerCertificateEntity,
  JoinTokenEntity,
  WorkerEntity,
  StackEntity,
  StackRevisionEntity,
  JobEntity,
  DriftItemEntity,
];
