import * as E from 'fp-ts/lib/Either.js';
import type { Application } from '../../../../application/application.js';
import { listPlantsScope } from '../../../../application/use-cases/list-plants.js';
import { decodeListSearch, encodeCursor, plantsJson } from '../codecs.js';
import type { Authorize } from '../pipeline.js';
import type { Handler, Responder } from '../respond.js';

/** GET /plants: 401, 403, then the query (400), then one page with a `next` link when more follow. */
export const listPlantsHandler =
  (app: Application, { send, fail }: Responder, authorize: Authorize): Handler =>
  async (req, res) => {
    const caller = await authorize(req, res, listPlantsScope);
    if (caller === undefined) return;
    const query = decodeListSearch(req.search);
    if (E.isLeft(query)) return fail(req, res, caller, query.left);
    const page = await app.listPlants(caller.principal, query.right)();
    if (E.isLeft(page)) return fail(req, res, caller, page.left);
    const { plants, next } = page.right;
    const link = next && { Link: `</plants?limit=${next.limit}&cursor=${encodeCursor(next.after)}>; rel="next"` };
    send(req, res, caller, 200, plantsJson(plants), link);
  };
