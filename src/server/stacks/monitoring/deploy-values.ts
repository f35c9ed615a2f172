import type { ServiceSpecMsg } from '../../../contracts/agent-protocol/index.js';
import { sealedFileContext, type SealedFile } from '../../jobs/job-secrets.js';
import type { FileCredential, ServiceDefinition } from '../definition/definition.types.js';
import { storeScrapesContainers, toServiceSpec } from '../service-spec.js';
import { DEPLOY_TOKENS, token, type DeployToken } from './monitoring-paths.js';

/** What a job fills into the generated files of a stack's services. */
export interface DeployValues {
  stackId: string;
  /** PUBLIC_URL: the containers reach the orchestrator there. */
  orchestratorUrl: string;
  clients: ReadonlyMap<FileCredential, { clientId: string; secret: string }>;
}

export interface DeploySpecs {
  services: ServiceSpecMsg[];
  /** The credential files' contents, sealed; the files in `services` are empty. */
  secrets: SealedFile[];
}

/** Values go inside quoted YAML and JSON strings: printable ASCII without quotes or backslashes. */
const SAFE = /^[\x21\x23-\x26\x28-\x5b\x5d-\x7e]+$/;

/** The roles a stack's files need credentials for. */
export function credentialRoles(services: ServiceDefinition[]): FileCredential[] {
  const roles = new Set<FileCredential>();
  for (const s of services) for (const f of s.files ?? []) if (f.credential) roles.add(f.credential);
  return [...roles].sort();
}

/**
 * The services as a job sends them: generated files with the deploy-time tokens filled in, and
 * credential files sealed with `seal` (their content travels only in the dispatched command). The
 * digests stay the definition's, which drift computes the same way.
 */
export function deploySpecs(
  services: ServiceDefinition[],
  values: DeployValues,
  seal: (plaintext: string, context: string) => string,
): DeploySpecs {
  const filled: Record<DeployToken, string | undefined> = {
    orchestrator_url: values.orchestratorUrl,
    stack_id: values.stackId,
    metrics_writer_id: values.clients.get('metrics_writer')?.clientId,
    metrics_reader_id: values.clients.get('metrics_reader')?.clientId,
  };
  const fill = (text: string): string => {
    let out = text;
    for (const name of DEPLOY_TOKENS) {
      if (!out.includes(token(name))) continue;
      const value = filled[name];
      if (value === undefined || !SAFE.test(value))
        throw new Error(`no usable value for {{${name}}} in a generated file`);
      out = out.replaceAll(token(name), value);
    }
    return out;
  };
  const secrets: SealedFile[] = [];
  const storeScrapes = storeScrapesContainers(services);
  const specs = services.map((service) => {
    const spec = toServiceSpec(service, storeScrapes);
    if (!service.files?.length) return spec;
    spec.files = service.files.map((f) => {
      if (!f.credential) return { path: f.path, content: fill(f.content), mode: f.mode };
      const client = values.clients.get(f.credential);
      if (!client) throw new Error(`no ${f.credential} client for ${service.name}`);
      secrets.push({
        service: service.name,
        path: f.path,
        sealed: seal(client.secret, sealedFileContext(values.stackId, service.name, f.path)),
      });
      return { path: f.path, content: '', mode: f.mode };
    });
    return spec;
  });
  return { services: specs, secrets };
}
