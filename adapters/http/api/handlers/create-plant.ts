import * as E from 'fp-ts/lib/Either.js';
import type { Application } from '../../../../application/application.js';
import { createPlantScope } from '../../../../application/use-cases/create-plant.js';
import { readBody } from '../../server/body.js';
import { decodeNewPlant, plantJson } from '../codecs.js';
import { quotaHeaders } from '../failures.js';
import { isIdentityEncoding, isJsonContentType, parseJson } from '../json.js';
import type { Authorize } from '../pipeline.js';
import type { Handler, Responder } from '../respond.js';

/**
 * POST /plants: 401, 403, then media type (415), size (413), JSON (400), fields (400), then the use case (409, 403
 * quota, 507). With a quota, a 200 carries the owner's Quota-Limit and Quota-Used.
 */
export const createPlantHandler =
  (app: Application, { send, fail, closed }: Responder, authorize: Authorize, bodyLimit: number): Handler =>
  async (req, res) => {
    const caller = await authorize(req, res, createPlantScope);
    if (caller === undefined) return;
    const { 'content-type': type, 'content-encoding': coding } = req.headers;
    // The usual spelling is taken without a call.
    if (type !== 'application/json' && !isJsonContentType(type)) {
      return fail(req, res, caller, { _tag: 'UnsupportedMediaType' });
    }
    if (coding !== undefined && !isIdentityEncoding(coding)) {
      return fail(req, res, caller, { _tag: 'UnsupportedContentEncoding' });
    }
    const bytes = await readBody(req, res, bodyLimit);
    if (bytes === undefined) return closed(req, res, caller); // the client went away mid-body
    // Plain checks rather than E.flatMap: fp-ts's data-first `dual` copies `arguments` into an array on every call.
    if (E.isLeft(bytes)) return fail(req, res, caller, bytes.left);
    const json = parseJson(bytes.right);
    if (E.isLeft(json)) return fail(req, res, caller, json.left);
    const candidate = decodeNewPlant(json.right);
    if (E.isLeft(candidate)) return fail(req, res, caller, candidate.left);
    const created = await app.createPlant(caller.principal, candidate.right)();
    if (E.isLeft(created)) return fail(req, res, caller, created.left);
    const { plant, quota } = created.right;
    send(req, res, caller, 200, plantJson(plant), quota === undefined ? undefined : quotaHeaders(quota));
  };
