import { defineConfig } from 'tsup';
import { packageConfig } from '../../tsup.base';

export default defineConfig(packageConfig());
