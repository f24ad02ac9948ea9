// The interactive reference at /api/v1/docs: Swagger UI over the OpenAPI document, served with
// its assets from the @fastify/swagger-ui package (no CDN: the service may run where nothing
// outside is reachable). Public like the document itself.
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

/**
 * The pages' own Content-Security-Policy, as strict as the dashboard's: Swagger UI's page has
 * no inline script or style (its package's csp.json lists none), so everything comes from the
 * service itself; `data:` images are its icons. The "Try it out" calls go to this service.
 */
const DOCS_CSP = {
  'default-src': ["'self'"],
  'script-src': ["'self'"],
  'style-src': ["'self'"],
  'img-src': ["'self'", 'data:'],
  'connect-src': ["'self'"],
  'font-src': ["'self'"],
  'object-src': ["'none'"],
  'base-uri': ["'none'"],
  'form-action': ["'self'"],
  'frame-ancestors': ["'none'"],
};

export async function registerDocs(app: FastifyInstance, prefix: string): Promise<void> {
  await app.register(swaggerUi, {
    routePrefix: prefix,
    staticCSP: DOCS_CSP,
    // No call to the public validator.swagger.io (its badge would leak the document's URL).
    validatorUrl: false,
    // BaseLayout: the page without Swagger UI's top bar, whose logo carries an inline <style>
    // the CSP refuses (the browser test in test/api/docs.test.ts would see the violation).
    uiConfig: { layout: 'BaseLayout', deepLinking: true, displayOperationId: true },
  });
}
