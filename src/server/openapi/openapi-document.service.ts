import { Injectable, type INestApplication } from '@nestjs/common';
import type { OpenAPIObject } from '@nestjs/swagger';
import { dump } from 'js-yaml';
import { buildOpenApiDocument } from './document.js';

/** The running application's document, built on first use (createApp attaches the application). */
@Injectable()
export class OpenApiDocumentService {
  private app?: INestApplication;
  private built?: { document: OpenAPIObject; json: string; yaml: string };

  attach(app: INestApplication): void {
    this.app = app;
  }

  private build() {
    if (!this.app) throw new Error('the OpenAPI document needs the application: call attach(app)');
    if (!this.built) {
      const document = buildOpenApiDocument(this.app);
      this.built = { document, json: JSON.stringify(document), yaml: toYaml(document) };
    }
    return this.built;
  }

  json(): string {
    return this.build().json;
  }

  yaml(): string {
    return this.build().yaml;
  }
}

/** The YAML form: block style, no anchors or line folding, so it reads and diffs like the JSON. */
export const toYaml = (document: OpenAPIObject): string => dump(document, { noRefs: true, lineWidth: -1 });
