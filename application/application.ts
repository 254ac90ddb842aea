import type * as O from 'fp-ts/lib/Option.js';
import type { TaskEither } from 'fp-ts/lib/TaskEither.js';
import type { Plant, PlantId } from '../domain/plant.js';
import type { Principal } from '../domain/principal.js';
import type { InvalidToken, AuthUnavailable } from './errors.js';
import type { RateDecision } from './ports/rate-limiter.js';
import type { RateLimited } from './use-cases/admit-request.js';
import type { Backend } from './use-cases/check-readiness.js';
import type { CreatedPlant, CreatePlantError } from './use-cases/create-plant.js';
import type { DeletePlantError } from './use-cases/delete-plant.js';
import type { ListPlantsError, ListPlantsQuery, PlantListPage } from './use-cases/list-plants.js';

export type { RateDecision };

/** Every use case, bound to its ports by bootstrap/: an inbound adapter holds this and cannot reach a port. */
export interface Application {
  readonly authenticate: (token: string) => TaskEither<InvalidToken | AuthUnavailable, Principal>;
  /** Charges a request to the principal's rate allowance; absent when rate limiting is off. */
  readonly admit?: (principal: Principal) => TaskEither<RateLimited, O.Option<RateDecision>>;
  readonly createPlant: (principal: Principal, candidate: Plant) => TaskEither<CreatePlantError, CreatedPlant>;
  readonly listPlants: (principal: Principal, query: ListPlantsQuery) => TaskEither<ListPlantsError, PlantListPage>;
  readonly deletePlant: (principal: Principal, id: PlantId) => TaskEither<DeletePlantError, void>;
  /** The backends that do not answer now, by name; empty when ready. */
  readonly checkReadiness: () => Promise<readonly Backend[]>;
}
