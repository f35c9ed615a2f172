import { Controller, Get, Header, Param, StreamableFile } from '@nestjs/common';
import { Public } from '../auth/auth.decorators.js';
import { NotFoundError } from '../common/app-error.js';
import { ApiDoc } from './api-doc.js';
import { DOCS_CONTENT_SECURITY_POLICY, DOCS_INIT, DOCS_PAGE, docsAsset } from './docs-ui.js';
import { OpenApiDocumentService } from './openapi-document.service.js';

const text = (type: string) => ({ content: { [type]: { schema: { type: 'string' } } } });
/** The viewer's files change only with the package; the document itself is never cached. */
const ASSET_CACHE = 'public, max-age=3600';

/** This document and its viewer: no token, like the probes (docs/api.md, "OpenAPI"). */
@Controller()
@Public()
export class OpenApiController {
  constructor(private readonly document: OpenApiDocumentService) {}

  @Get('api/v1/openapi.json')
  @Header('Content-Type', 'application/json; charset=utf-8')
  @ApiDoc({
    summary: 'This OpenAPI document (JSON)',
    tag: 'Documentation',
    responses: {
      200: {
        description: 'The OpenAPI 3.1 document.',
        content: { 'application/json': { schema: { type: 'object' } } },
      },
    },
  })
  json(): string {
    return this.document.json();
  }

  @Get('api/v1/openapi.yaml')
  @Header('Content-Type', 'application/yaml; charset=utf-8')
  @ApiDoc({
    summary: 'This OpenAPI document (YAML)',
    tag: 'Documentation',
    responses: { 200: { description: 'The OpenAPI 3.1 document.', ...text('application/yaml') } },
  })
  yaml(): string {
    return this.document.yaml();
  }

  @Get('docs')
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Content-Security-Policy', DOCS_CONTENT_SECURITY_POLICY)
  @ApiDoc({
    summary: 'The API reference (Swagger UI)',
    description: 'Served from the swagger-ui-dist package: works offline.',
    tag: 'Documentation',
    responses: { 200: { description: 'The page.', ...text('text/html') } },
  })
  page(): string {
    return DOCS_PAGE;
  }

  @Get('docs/:file')
  @Header('Cache-Control', ASSET_CACHE)
  @Header('Content-Security-Policy', DOCS_CONTENT_SECURITY_POLICY)
  @ApiDoc({
    summary: 'A file of the API reference',
    description:
      '`swagger-ui.css`, `swagger-ui-bundle.js`, `init.js`, `favicon-32x32.png`, `favicon-16x16.png`.',
    tag: 'Documentation',
    responses: {
      200: {
        description: 'The file.',
        content: {
          'text/css': { schema: { type: 'string' } },
          'text/javascript': { schema: { type: 'string' } },
          'image/png': { schema: { type: 'string', format: 'binary' } },
        },
      },
    },
    problems: { 404: 'No such file.' },
  })
  asset(@Param('file') file: string): StreamableFile {
    if (file === 'init.js')
      return new StreamableFile(Buffer.from(DOCS_INIT), { type: 'text/javascript; charset=utf-8' });
    const asset = docsAsset(file);
    if (!asset) throw new NotFoundError('The API reference has no such file.');
    return new StreamableFile(asset.body, { type: asset.type, length: asset.body.length });
  }
}
