import { plantRepositoryContract } from '../contracts/plant-repository.contract.js';
import { storageBackends } from '../support/storage-backends.js';

for (const backend of storageBackends().filter((b) => b.name.startsWith('mongodb'))) {
  plantRepositoryContract(backend.name, backend.setup);
}
