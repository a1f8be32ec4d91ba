"""An EKS cluster for GPU inference (pulumi-aws): VPC, IAM, cluster, node groups, EFS.

What it builds, and why each setting:
- Its own AWS provider for the manifest's region (so clusters in several regions coexist; the
  standard AWS credential chain applies).
- A VPC with one public and one private subnet per availability zone (tagged for load balancers),
  an internet gateway and one NAT gateway; nodes run in the private subnets.
- IAM roles: the cluster role (AmazonEKSClusterPolicy), the node role (worker, CNI and ECR read-only
  policies), and an EFS CSI driver role assumed through EKS Pod Identity.
- The cluster, with access entries (`authentication_mode: API`) and admin access for the identity
  that creates it, so `aws eks get-token` works for whoever runs `pulumi up`.
- A system node group (standard AL2023) and one managed node group per GPU pool from its class's
  `provisioning.eks`: `AL2023_x86_64_NVIDIA` AMI (NVIDIA driver included), instance type, disk,
  scaling between the pool's floor and ceiling, the pool's subnets by zone, node labels, and the
  `nvidia.com/gpu=true:NoSchedule` taint so only GPU workloads land there. The desired size is
  ignored after creation: the cluster autoscaler owns it.
- EFS with a mount target per private subnet, the `aws-efs-csi-driver` add-on, and a
  ReadWriteMany StorageClass (`efs.csi.aws.com`, access-point provisioning).
- A kubeconfig that authenticates through `aws eks get-token`.

An EFA pool (`fabric.type: EFA`) gets no EFA network interfaces here: that needs a launch template
and a placement group, which this component does not create.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Sequence
from typing import NotRequired, TypedDict

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
from pulumi import ResourceOptions

from modelplane.api import Fleet, Provider
from modelplane.api import InferenceCluster as ClusterManifest
from modelplane.compose import GPU_TOLERATION
from modelplane.pulumi.cluster import (
    RWX_STORAGE_CLASS,
    ClusterComponent,
    GpuPoolArgs,
    gpu_pools,
    kubernetes_provider,
    pool_labels,
    rwx_storage_class,
)
from modelplane.pulumi.kubeconfig import eks_kubeconfig

GPU_AMI = "AL2023_x86_64_NVIDIA"
GPU_TAINT: aws.eks.NodeGroupTaintArgsDict = {"key": GPU_TOLERATION["key"], "value": "true", "effect": "NO_SCHEDULE"}
"""The taint the pods' `compose.stack.GPU_TOLERATION` tolerates (same key, NoSchedule)."""
MANAGED = "arn:aws:iam::aws:policy/"
NODE_POLICIES = ("AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryReadOnly")


class EksClusterArgs(TypedDict):
    name: str
    """The EKS cluster name (the InferenceCluster's name)."""
    region: str
    """The AWS region, e.g. us-west-2."""
    kubernetes_version: str
    """The Kubernetes version, e.g. "1.34" (DRA's resource.k8s.io/v1 needs 1.34)."""
    pools: Sequence[GpuPoolArgs]
    """The GPU node groups."""
    zones: NotRequired[Sequence[str]]
    """Availability zones of the VPC's subnets; EKS needs at least two. Default: every zone the
    pools name, sorted."""
    vpc_cidr: NotRequired[str]
    """The VPC's range, split into /20 subnets (public first, then private). Default: 10.20.0.0/16."""
    storage_class_name: NotRequired[str]
    """Name of the ReadWriteMany StorageClass created for ModelCache volumes. Default: modelplane-rwx."""
    system_instance_type: NotRequired[str]
    """Instance type of the system node group (2 nodes, 1-3). Default: m6i.large."""


def eks_args(cluster: ClusterManifest, fleet: Fleet) -> EksClusterArgs:
    """EksClusterArgs from a validated EKS InferenceCluster."""
    eks = cluster.spec.cluster.eks
    assert eks is not None, "validated: an EKS cluster has an eks block"
    return {"name": cluster.name, "region": eks.region, "kubernetes_version": eks.kubernetes_version,
            "pools": gpu_pools(cluster, fleet, Provider.EKS)}


def _assume(service: str, *actions: str) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": service}, "Action": list(actions or ("sts:AssumeRole",))}]})


class EksCluster(ClusterComponent):
    """An EKS cluster with NVIDIA GPU node groups, an EFS RWX class and a kubeconfig."""

    storage_class_name: str
    """The ReadWriteMany StorageClass on EFS (access-point provisioning)."""
    cluster: aws.eks.Cluster
    node_groups: dict[str, aws.eks.NodeGroup]
    """GPU node groups by pool name."""

    def __init__(self, name: str, args: EksClusterArgs, opts: ResourceOptions | None = None):
        super().__init__("modelplane:index:EksCluster", name, {}, opts)
        self.storage_class_name = args.get("storage_class_name", RWX_STORAGE_CLASS)
        zones = sorted(args.get("zones") or {zone for pool in args["pools"] for zone in pool["zones"]})
        if len(zones) < 2:
            raise ValueError(f"EKS cluster {args['name']}: EKS needs subnets in at least two availability zones; "
                             f"the pools name {zones or 'none'}: list zones on the nodePools or pass zones")
        outside = sorted({zone for pool in args["pools"] for zone in pool["zones"]} - set(zones))
        if outside:
            raise ValueError(f"EKS cluster {args['name']}: pools use zones {outside} outside the VPC's zones {zones}")
        self.aws_provider = aws.Provider(f"{name}-aws", region=args["region"], opts=ResourceOptions(parent=self))
        self._child = ResourceOptions(parent=self, provider=self.aws_provider)
        vpc_cidr = args.get("vpc_cidr", "10.20.0.0/16")
        vpc, public, private = self._network(name, args["name"], vpc_cidr, zones)

        cluster_role, cluster_ready = self._role(f"{name}-cluster-role", "eks.amazonaws.com",
                                                 ["AmazonEKSClusterPolicy"])
        node_role, nodes_ready = self._role(f"{name}-node-role", "ec2.amazonaws.com", NODE_POLICIES)
        self.cluster = aws.eks.Cluster(
            f"{name}-cluster", name=args["name"], version=args["kubernetes_version"], role_arn=cluster_role.arn,
            vpc_config={"subnet_ids": [s.id for s in (*private.values(), *public.values())],
                        "endpoint_private_access": True, "endpoint_public_access": True},
            access_config={"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": True},
            opts=ResourceOptions.merge(self._child, ResourceOptions(depends_on=cluster_ready)))
        system = aws.eks.NodeGroup(
            f"{name}-system", cluster_name=self.cluster.name, node_group_name="modelplane-system",
            node_role_arn=node_role.arn,
            subnet_ids=[s.id for s in private.values()], ami_type="AL2023_x86_64_STANDARD",
            instance_types=[args.get("system_instance_type", "m6i.large")],
            scaling_config={"desired_size": 2, "min_size": 1, "max_size": 3},
            opts=ResourceOptions.merge(self._child, ResourceOptions(depends_on=nodes_ready)))
        self.node_groups = {pool["name"]: self._gpu_group(name, pool, node_role, nodes_ready, private)
                            for pool in args["pools"]}
        file_system = self._efs(name, vpc, vpc_cidr, private, system)

        endpoint, ca = self.cluster.endpoint, self.cluster.certificate_authority.data
        self.kubeconfig = pulumi.Output.secret(pulumi.Output.all(endpoint, ca).apply(
            lambda values: eks_kubeconfig(args["name"], args["region"], values[0], values[1])))
        self.provider = kubernetes_provider(name, args["name"], self.kubeconfig, self, depends_on=[system])
        rwx_storage_class(name, self.storage_class_name, "efs.csi.aws.com",
                          {"provisioningMode": "efs-ap", "fileSystemId": file_system.id, "directoryPerms": "700"},
                          self.provider, self, self.cluster)
        self.anchor = self.cluster
        self.register_outputs({"kubeconfig": self.kubeconfig, "endpoint": endpoint})

    def _network(self, name: str, cluster: str, cidr: str, zones: list[str]
                 ) -> tuple[aws.ec2.Vpc, dict[str, aws.ec2.Subnet], dict[str, aws.ec2.Subnet]]:
        """The VPC: per zone a public subnet (load balancers, NAT) and a private one (nodes)."""
        vpc = aws.ec2.Vpc(f"{name}-vpc", cidr_block=cidr, enable_dns_hostnames=True, enable_dns_support=True,
                          tags={"Name": cluster}, opts=self._child)
        blocks = list(ipaddress.ip_network(cidr).subnets(new_prefix=20))
        owned = {f"kubernetes.io/cluster/{cluster}": "shared"}
        public: dict[str, aws.ec2.Subnet] = {}
        private: dict[str, aws.ec2.Subnet] = {}
        for index, zone in enumerate(zones):
            public[zone] = aws.ec2.Subnet(
                f"{name}-public-{zone}", vpc_id=vpc.id, availability_zone=zone, cidr_block=str(blocks[index]),
                map_public_ip_on_launch=True, tags={**owned, "kubernetes.io/role/elb": "1"}, opts=self._child)
            private[zone] = aws.ec2.Subnet(
                f"{name}-private-{zone}", vpc_id=vpc.id, availability_zone=zone,
                cidr_block=str(blocks[len(blocks) // 2 + index]),
                tags={**owned, "kubernetes.io/role/internal-elb": "1"}, opts=self._child)
        gateway = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, opts=self._child)
        nat_ip = aws.ec2.Eip(f"{name}-nat-ip", domain="vpc", opts=self._child)
        nat = aws.ec2.NatGateway(f"{name}-nat", allocation_id=nat_ip.id, subnet_id=public[zones[0]].id,
                                 opts=self._child)
        default_routes: list[tuple[str, dict[str, aws.ec2.Subnet], aws.ec2.RouteTableRouteArgsDict]] = [
            ("public", public, {"cidr_block": "0.0.0.0/0", "gateway_id": gateway.id}),
            ("private", private, {"cidr_block": "0.0.0.0/0", "nat_gateway_id": nat.id})]
        for kind, subnets, route in default_routes:
            table = aws.ec2.RouteTable(f"{name}-{kind}-routes", vpc_id=vpc.id, routes=[route], opts=self._child)
            for zone, subnet in subnets.items():
                aws.ec2.RouteTableAssociation(f"{name}-{kind}-{zone}", subnet_id=subnet.id, route_table_id=table.id,
                                              opts=self._child)
        return vpc, public, private

    def _role(self, name: str, service: str, policies: Sequence[str], *actions: str
              ) -> tuple[aws.iam.Role, list[pulumi.Resource]]:
        """A role `service` assumes with AWS-managed `policies`, and what to wait for before using it."""
        role = aws.iam.Role(name, assume_role_policy=_assume(service, *actions), opts=self._child)
        attached = [aws.iam.RolePolicyAttachment(f"{name}-{policy.rsplit('/', 1)[-1]}", role=role.name,
                                                 policy_arn=MANAGED + policy, opts=self._child)
                    for policy in policies]
        return role, [role, *attached]

    def _gpu_group(self, name: str, pool: GpuPoolArgs, role: aws.iam.Role, role_ready: list[pulumi.Resource],
                   private: dict[str, aws.ec2.Subnet]) -> aws.eks.NodeGroup:
        subnets = [private[zone].id for zone in pool["zones"]] or [s.id for s in private.values()]
        return aws.eks.NodeGroup(
            f"{name}-{pool['name']}", cluster_name=self.cluster.name, node_group_name=pool["name"],
            node_role_arn=role.arn, subnet_ids=subnets, ami_type=GPU_AMI, instance_types=[pool["machine_type"]],
            disk_size=pool["disk_size_gb"], labels=pool_labels(pool["name"], pool["accelerator_type"]),
            taints=[GPU_TAINT],
            scaling_config={"desired_size": pool["node_count"], "min_size": pool["min_node_count"],
                            "max_size": max(pool["max_node_count"], 1)},
            opts=ResourceOptions.merge(self._child, ResourceOptions(
                depends_on=role_ready, ignore_changes=["scalingConfig.desiredSize"])))

    def _efs(self, name: str, vpc: aws.ec2.Vpc, vpc_cidr: str, private: dict[str, aws.ec2.Subnet],
             system: aws.eks.NodeGroup) -> aws.efs.FileSystem:
        """EFS for ReadWriteMany volumes, reachable from the nodes, and the CSI driver add-on."""
        file_system = aws.efs.FileSystem(f"{name}-efs", encrypted=True, throughput_mode="elastic",
                                         tags={"Name": f"{name}-model-cache"}, opts=self._child)
        nfs = aws.ec2.SecurityGroup(
            f"{name}-efs-nfs", vpc_id=vpc.id, description="NFS from the cluster's VPC to EFS",
            ingress=[{"protocol": "tcp", "from_port": 2049, "to_port": 2049, "cidr_blocks": [vpc_cidr]}],
            egress=[{"protocol": "-1", "from_port": 0, "to_port": 0, "cidr_blocks": ["0.0.0.0/0"]}], opts=self._child)
        for zone, subnet in private.items():
            aws.efs.MountTarget(f"{name}-efs-{zone}", file_system_id=file_system.id, subnet_id=subnet.id,
                                security_groups=[nfs.id], opts=self._child)
        agent = aws.eks.Addon(f"{name}-pod-identity", cluster_name=self.cluster.name,
                              addon_name="eks-pod-identity-agent", opts=self._child)
        driver_role, driver_ready = self._role(f"{name}-efs-csi-role", "pods.eks.amazonaws.com",
                                               ["service-role/AmazonEFSCSIDriverPolicy"],
                                               "sts:AssumeRole", "sts:TagSession")
        aws.eks.Addon(
            f"{name}-efs-csi", cluster_name=self.cluster.name, addon_name="aws-efs-csi-driver",
            pod_identity_associations=[{"role_arn": driver_role.arn, "service_account": "efs-csi-controller-sa"}],
            opts=ResourceOptions.merge(self._child, ResourceOptions(depends_on=[agent, system, *driver_ready])))
        return file_system
