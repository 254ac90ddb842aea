import { memoryPlantRepository } from '../../adapters/storage/memory/memory-plant-repository.js';
import { plantRepositoryContract } from '../contracts/plant-repository.contract.js';

plantRepositoryContract('memory', async () => ({ repo: memoryPlantRepository(), teardown: async () => {} }));
