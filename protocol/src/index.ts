export * from './constants';
export * from './envelope';
export * from './enums';
export * from './settings';
export * from './events';
export * from './api';
export * from './validation';
export * from './streamer';
