import * as E from 'fp-ts/lib/Either.js';
import type { Application } from '../../../../application/application.js';
import { deletePlantScope } from '../../../../application/use-cases/delete-plant.js';
import { decodePathId } from '../codecs.js';
import type { Authorize } from '../pipeline.js';
import type { Handler, Responder } from '../respond.js';

/** DELETE /plants/{id}: 401, 403, then the path id (400), then 204 or 404. */
export const deletePlantHandler =
  (app: Application, { send, fail }: Responder, authorize: Authorize): Handler =>
  async (req, res) => {
    const caller = await authorize(req, res, deletePlantScope);
    if (caller === undefined) return;
    const id = decodePathId(req.params['id']);
    if (E.isLeft(id)) return fail(req, res, caller, id.left);
    const deleted = await app.deletePlant(caller.principal, id.right)();
    if (E.isLeft(deleted)) return fail(req, res, caller, deleted.left);
    send(req, res, caller, 204, undefined);
  };
