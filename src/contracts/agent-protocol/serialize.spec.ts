import { describe, expect, it } from 'vitest';
import {
  loadAgentProto,
  serializeServerMessage,
  servedAgentGateway,
  serverMessageBytes,
  type ServerMessage,
} from './index.js';

const job = (id: string): ServerMessage => ({
  job: {
    job_id: id,
    type: 'provision',
    stack_id: '00000000-0000-4000-8000-000000000001',
    stack_name: 'web',
    revision: 3,
    services: [],
    timeout_ms: 600_000,
    attempt: 1,
    keep: [],
    replace: [],
    log_push_url: '',
  },
});

describe('the service encodes a message it measured once', () => {
  const method = () => servedAgentGateway(loadAgentProto()).Connect;

  it('serves Connect with the serializer that reuses the measured bytes', () => {
    expect(method().responseSerialize).toBe(serializeServerMessage);
    // The rest of the definition is the protocol's own.
    expect(method().path).toBe(loadAgentProto().AgentGateway.service.Connect.path);
  });

  it('hands over the bytes it measured, once, and they decode to the message', () => {
    const message = job('00000000-0000-4000-8000-00000000000a');
    const size = serverMessageBytes(message);
    // Changed after it was measured (the service never does): what goes out is what was measured,
    // so it was not encoded again.
    message.job!.revision = 4;
    const bytes = serializeServerMessage(message);
    expect(bytes.length).toBe(size);
    expect(method().responseDeserialize(bytes)).toMatchObject({ job: { revision: 3 } });
    // Used up: the next encoding is of the message as it is.
    expect(method().responseDeserialize(serializeServerMessage(message))).toMatchObject({
      job: { revision: 4 },
    });
  });

  it('encodes a message that was never measured', () => {
    const message = job('00000000-0000-4000-8000-00000000000b');
    const bytes = serializeServerMessage(message);
    expect(method().responseDeserialize(bytes)).toMatchObject(message);
  });
});
