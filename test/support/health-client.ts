import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { protoPath } from 'grpc-health-check';

/** A grpc.health.v1 client, as load balancers and grpc_health_probe use it. */
export class HealthClient {
  private readonly client: grpc.Client & {
    Check(
      req: { service: string },
      cb: (err: grpc.ServiceError | null, res?: { status: string }) => void,
    ): void;
  };

  constructor(endpoint: string, credentials: grpc.ChannelCredentials) {
    const def = protoLoader.loadSync(protoPath, { keepCase: true, enums: String, defaults: true });
    const pkg = grpc.loadPackageDefinition(def) as unknown as {
      grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
    };
    this.client = new pkg.grpc.health.v1.Health(endpoint, credentials) as never;
  }

  check(service: string): Promise<string> {
    return new Promise((resolve, reject) =>
      this.client.Check({ service }, (err, res) => {
        this.client.close();
        if (err) reject(err);
        else resolve(res!.status);
      }),
    );
  }
}
