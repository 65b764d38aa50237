/* STREAM triad (a[i] = b[i] + s * c[i]) with OpenMP: the memory-bandwidth limit of this machine. */
void triad(double *restrict a, const double *restrict b, const double *restrict c, double s, long n)
{
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}
