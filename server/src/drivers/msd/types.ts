/** The mass-storage driver: lends an image to the remote computer as a CD-ROM or flash drive (issue 5). */
export interface MsdDriverState {
  online: boolean;
}

export interface MsdDriver {
  readonly name: string;
  getState(): MsdDriverState;
  onState(listener: (state: MsdDriverState) => void): () => void;
  init(): Promise<void>;
  dispose(): Promise<void>;
}
